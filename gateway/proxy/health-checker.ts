/**
 * Active health checks (SPEC §16): every endpoint of an upstream with a `health_check` gets
 * `GET <base path><path>` every `interval_ms`; a probe passes on a 2xx or 3xx answer within
 * `timeout_ms`. An endpoint becomes unhealthy after `unhealthy_threshold` consecutive failing probes
 * and healthy again after `healthy_threshold` passing ones. Endpoints start healthy and each gets
 * its first probe at start; later rounds are spread over the interval (endpoint i of n is probed
 * i × interval / n after the round's start), so a large pool is never probed all at once
 * (Kong/kong#7409), and each later interval is shortened by a random part of up to
 * {@link PROBE_JITTER} of it (Envoy's `interval_jitter_percent`, api/envoy/config/core/v3/
 * health_check.proto), so endpoints probed together, or by several gateways started together, drift
 * apart instead of staying in step; only shortened, so a restarted instance is still seen within
 * `interval_ms` × `healthy_threshold`. Each change is logged once, here.
 *
 * One checker per gateway process, or with `workers` the cluster primary's alone (Kong's
 * per-worker probing multiplied the probe traffic by the worker count, Kong/kong#6788): it reports
 * every change to `onChange`, and {@link HealthChecker.states} gives the whole picture to apply
 * to a configuration built later or a worker that starts later.
 */
import { Client } from "undici";
import type { Logger } from "pino";
import type { Counter } from "prom-client";
import type { GatewayConfig } from "../config/schema.js";
import { endpointsOf } from "../config/upstream-schema.js";
import { afterPendingIo } from "../base/after-pending-io.js";
import { HealthState } from "./balancing/health-state.js";
import { endpointAddress, undiciConnect } from "./endpoint-address.js";
import type { Clock } from "../base/clock.js";

/** One endpoint's active health state. */
export interface HealthReport {
  upstream: string;
  /** `host:port` as configured. */
  endpoint: string;
  healthy: boolean;
}

/** Dependencies of a checker. */
export interface HealthCheckerDeps {
  /** `gateway_upstream_health_checks_total`. */
  checks: Counter<"upstream" | "endpoint" | "result">;
  logger: Logger;
  /** Told of every change of an endpoint's state. */
  onChange: (report: HealthReport) => void;
  /** Directory TLS files resolve against. */
  baseDir: string;
  /** Times the probes (`monotonicMs`) and draws the intervals' jitter (`random`). */
  clock: Clock;
}

/** The largest share of `interval_ms` a probe's interval is shortened by. */
export const PROBE_JITTER = 0.1;

/**
 * The wait before an endpoint's next probe: the interval, shortened by its jitter, counted from the
 * previous probe's start, plus the endpoint's place in the round the first time.
 * @param intervalMs - `health_check.interval_ms`
 * @param elapsedMs - time since the previous probe started (ms)
 * @param offsetMs - the endpoint's place in the round (ms), 0 after the first probe
 * @param draw - uniform in [0, 1)
 * @returns the delay (ms), never negative, never above `intervalMs` + `offsetMs` − `elapsedMs`
 */
export function nextProbeDelayMs(
  intervalMs: number,
  elapsedMs: number,
  offsetMs: number,
  draw: number,
): number {
  const jittered = intervalMs - Math.floor(PROBE_JITTER * intervalMs * draw);
  return Math.max(0, jittered + offsetMs - elapsedMs);
}

interface Target {
  readonly upstream: string;
  readonly endpoint: string;
  readonly client: Client;
  readonly path: string;
  readonly timeoutMs: number;
  readonly state: HealthState;
  /** Delay of this endpoint's probes within a round (ms), added once after the first probe. */
  offsetMs: number;
  timer: NodeJS.Timeout | null;
}

/** One probe's timeout: aborted only if its head has not come once pending I/O is read. */
interface ProbeWatch {
  readonly abort: AbortController;
  answered: boolean;
}

function probeTimerFired(watch: ProbeWatch): void {
  afterPendingIo(probeTimedOut, watch);
}

function probeTimedOut(watch: ProbeWatch): void {
  if (!watch.answered) watch.abort.abort();
}

/** Probes every endpoint of every upstream that has a `health_check`. */
export class HealthChecker {
  private readonly targets: Target[] = [];
  /** `health_check.interval_ms` by upstream (ms). */
  private readonly intervals: Map<string, number>;
  private started = false;
  private stopped = false;

  /**
   * @param known - what earlier probes found (a reload keeps it); other endpoints start healthy
   * @throws ConfigFileError when an upstream's TLS file cannot be read
   */
  constructor(
    config: GatewayConfig,
    private readonly deps: HealthCheckerDeps,
    known: readonly HealthReport[] = [],
  ) {
    for (const [name, u] of Object.entries(config.upstreams)) {
      const h = u.health_check;
      if (h === undefined) continue;
      for (const e of endpointsOf(u)) {
        const at = endpointAddress(name, u, e.url, deps.baseDir);
        const endpoint = at.name;
        this.targets.push({
          upstream: name,
          endpoint,
          client: new Client(at.origin, {
            pipelining: 1,
            // Backstops only: the probe's own timer decides, after pending I/O is read.
            headersTimeout: 2 * h.timeout_ms,
            bodyTimeout: 2 * h.timeout_ms,
            connect: undiciConnect(at, h.timeout_ms),
          }),
          path: at.basePath + h.path,
          timeoutMs: h.timeout_ms,
          state: new HealthState(
            { healthyThreshold: h.healthy_threshold, unhealthyThreshold: h.unhealthy_threshold },
            known.find((r) => r.upstream === name && r.endpoint === endpoint)?.healthy ?? true,
          ),
          offsetMs: 0,
          timer: null,
        });
      }
    }
    this.intervals = new Map(
      Object.entries(config.upstreams).map(([n, u]) => [n, u.health_check?.interval_ms ?? 0]),
    );
  }

  /** Starts probing (the first round spread over one interval); later calls do nothing. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    const byUpstream = new Map<string, Target[]>();
    for (const t of this.targets) {
      const list = byUpstream.get(t.upstream);
      if (list === undefined) byUpstream.set(t.upstream, [t]);
      else list.push(t);
    }
    for (const [name, list] of byUpstream) {
      const interval = this.intervals.get(name)!;
      list.forEach((t, i) => {
        t.offsetMs = Math.floor((i * interval) / list.length);
        this.schedule(t, 0);
      });
    }
  }

  /** Every probed endpoint's state now. */
  states(): HealthReport[] {
    return this.targets.map((t) => ({
      upstream: t.upstream,
      endpoint: t.endpoint,
      healthy: t.state.healthy,
    }));
  }

  /** Stops probing and closes the probes' connections. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.targets) if (t.timer !== null) clearTimeout(t.timer);
    await Promise.all(this.targets.map((t) => t.client.destroy().catch(() => {})));
  }

  private schedule(t: Target, delayMs: number): void {
    if (this.stopped) return;
    t.timer = setTimeout(() => void this.probe(t), delayMs);
    t.timer.unref();
  }

  private async probe(t: Target): Promise<void> {
    const startedMs = this.deps.clock.monotonicMs();
    let passed = false;
    try {
      // `timeout_ms` until the head, decided after the I/O already arrived is read.
      const watch: ProbeWatch = { abort: new AbortController(), answered: false };
      const timer = setTimeout(probeTimerFired, t.timeoutMs, watch);
      try {
        const res = await t.client.request({
          path: t.path,
          method: "GET",
          headers: { "user-agent": "api-gateway-health-check" },
          signal: watch.abort.signal,
        });
        watch.answered = true;
        await res.body.dump();
        passed = res.statusCode >= 200 && res.statusCode < 400;
      } finally {
        clearTimeout(timer);
      }
    } catch {
      passed = false;
    }
    if (this.stopped) return;
    this.deps.checks.inc({ upstream: t.upstream, endpoint: t.endpoint, result: passed ? "pass" : "fail" });
    if (passed ? t.state.pass() : t.state.fail()) {
      const healthy = t.state.healthy;
      const fields = { upstream: t.upstream, endpoint: t.endpoint, healthy };
      if (healthy) this.deps.logger.info(fields, "upstream endpoint healthy again");
      else this.deps.logger.warn(fields, "upstream endpoint unhealthy: failing health checks");
      this.deps.onChange(fields);
    }
    // The interval counts from the probe's start, so a slow endpoint is not probed less often.
    const elapsedMs = this.deps.clock.monotonicMs() - startedMs;
    const draw = this.deps.clock.random();
    this.schedule(t, nextProbeDelayMs(this.intervals.get(t.upstream)!, elapsedMs, t.offsetMs, draw));
    t.offsetMs = 0;
  }
}
