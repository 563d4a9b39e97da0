/**
 * Upstream pools across a process group (SPEC §16 with §15): the primary alone runs the active
 * health checks, whatever the number of workers, and sends each change to every worker at once
 * (well within one interval), and every state to a worker that starts later or after a reload;
 * `GET /upstreams` combines the workers' views: `in_flight` summed, `ejected` while any worker
 * ejects the endpoint, `healthy` as the primary's probes found it.
 */
import { systemClock } from "../base/clock.js";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { LoadedConfig } from "../config/load.js";
import { createHealthCheckMetric } from "../observability/upstream-metrics.js";
import { HealthChecker, type HealthReport } from "../proxy/health-checker.js";
import type { UpstreamSnapshot } from "../proxy/upstream-snapshot.js";
import { is, type Member } from "./member.js";

/** A worker that does not answer within this is left out of `GET /upstreams` (ms). */
const ANSWER_TIMEOUT_MS = 2_000;

/** The primary's side of the group's upstream pools. */
export class GroupUpstreams {
  private probes: HealthChecker | null = null;
  private readonly checks;

  /**
   * @param members - the workers serving now
   * @param nextId - a fresh exchange id for a question to the workers
   */
  constructor(
    registry: Registry,
    private readonly logger: Logger,
    private readonly members: () => Member[],
    private readonly nextId: () => number,
  ) {
    this.checks = createHealthCheckMetric(registry);
  }

  /**
   * Probes the upstreams of `loaded` from now on (at start, and after each applied reload),
   * carrying over what the previous probes knew, and sends every state to every worker.
   * @throws ConfigFileError when an upstream's TLS file cannot be read
   */
  configure(loaded: LoadedConfig): void {
    const known = this.probes?.states() ?? [];
    const next = new HealthChecker(
      loaded.config,
      {
        checks: this.checks,
        logger: this.logger,
        baseDir: loaded.baseDir,
        clock: systemClock,
        onChange: (r) => this.broadcast([r]),
      },
      known,
    );
    void this.probes?.stop();
    this.probes = next;
    this.broadcast(next.states());
    next.start();
  }

  /** Every probed endpoint's state now. */
  states(): HealthReport[] {
    return this.probes?.states() ?? [];
  }

  /** Sends every state to one (new) worker. */
  greet(member: Member): void {
    const reports = this.probes?.states() ?? [];
    if (reports.length > 0) member.send({ type: "gw:health", reports });
  }

  /** `GET /upstreams` for the group. */
  async snapshot(): Promise<Record<string, UpstreamSnapshot>> {
    const id = this.nextId();
    const answers = await Promise.all(
      this.members().map((m) =>
        m.ask({ type: "gw:upstreams", id }, is("gw:upstreams", id), ANSWER_TIMEOUT_MS),
      ),
    );
    let out: Record<string, UpstreamSnapshot> | null = null;
    for (const a of answers) {
      if (a === null) continue;
      if (out === null) {
        out = a.upstreams;
        continue;
      }
      for (const [name, u] of Object.entries(a.upstreams)) {
        const base = out[name];
        if (base === undefined) continue;
        // SPEC §18's limits are per process: the group's is their sum, as its calls in flight.
        base.in_flight += u.in_flight;
        if (base.concurrency_limit !== null && u.concurrency_limit !== null) {
          base.concurrency_limit += u.concurrency_limit;
        }
        u.endpoints.forEach((e, i) => {
          const b = base.endpoints[i];
          if (b === undefined || b.endpoint !== e.endpoint) return;
          b.in_flight += e.in_flight;
          b.ejected ||= e.ejected;
        });
      }
    }
    return out ?? {};
  }

  /** Stops probing. */
  async stop(): Promise<void> {
    await this.probes?.stop();
  }

  private broadcast(reports: HealthReport[]): void {
    if (reports.length === 0) return;
    for (const m of this.members()) m.send({ type: "gw:health", reports });
  }
}
