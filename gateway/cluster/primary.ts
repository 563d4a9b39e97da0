/**
 * The cluster primary (SPEC §15), run by `gateway start` when `workers` is more than one. It
 * serves no request itself: node:cluster hands the API port's connections to its workers (its
 * direct children). The primary:
 *
 * - validates the configuration (at start and on SIGHUP, with the one loader) and sends it to the
 *   workers, which never read the file: on SIGHUP each worker builds the new configuration, and
 *   only when every one has built it does any apply it (two phases, `gw:prepare` then
 *   `gw:commit`); a file rejected by the primary or by any worker restarts no worker and changes
 *   nothing, and is counted once in `gateway_config_reloads_total{result="error"}`;
 * - serves the admin listener for the group: `/metrics` combined over the live workers
 *   (`metrics.ts`), `/readyz` ready while every serving worker is, `/healthz`;
 * - is the only writer of stdout and stderr: workers write to pipes the primary reads, and whole
 *   lines are forwarded (`line-relay.ts`), so lines of different workers never interleave;
 * - replaces a worker that exits unexpectedly at once, with one `warn` line naming its PID and its
 *   exit code or signal; the replacement starts on the configuration in force;
 * - on SIGTERM/SIGINT closes the admin listener, tells every worker to drain (each closes its API
 *   listener at once, so the shared port refuses new connections once the last has), and exits 0
 *   after the last worker has exited.
 *
 * Starting workers and reloading are serialised, so a worker never starts on a configuration that
 * a reload in progress is about to replace.
 */
import cluster from "node:cluster";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import pino, { type DestinationStream, type Logger } from "pino";
import { Registry } from "prom-client";
import { createAdminServer } from "../server/admin.js";
import { GroupTopCallers } from "./group-usage.js";
import { ListenError, listenOn } from "../server/listen.js";
import { ConfigFollower } from "../config/follow.js";
import type { LoadedConfig } from "../config/load.js";
import { hashOf } from "../config/named-files.js";
import { workerCount } from "../config/workers-schema.js";
import { createLogger, prettyDestination } from "../observability/logger.js";
import { createPrimaryMetrics, setConfigInfo } from "../observability/metrics.js";
import type { ReloadTrigger } from "../server/server.js";
import { reloadGroup } from "./group-reload.js";
import { LineRelay, type LineSink } from "./line-relay.js";
import { is, Member } from "./member.js";
import { GroupUpstreams } from "./group-upstreams.js";
import { combineMetrics, type MetricSource } from "./group-metrics.js";
import { systemClock } from "../base/clock.js";

/** A worker has this long to build its gateway and bind (ms); tsx-compiled sources are slow. */
const START_TIMEOUT_MS = 30_000;
/** A worker that does not answer a scrape within this is left out of it (ms). */
const METRICS_TIMEOUT_MS = 2_000;
/** At exit, how long the group's last lines may take to reach a slow stdout (ms). */
const LAST_LINES_MS = 10_000;
/** After `listen.grace_ms`, workers still running get this long before SIGKILL (ms). */
const STOP_MARGIN_MS = 5_000;

/**
 * Runs the primary of a `workers` > 1 gateway until SIGTERM/SIGINT (then exits 0), or exits 1 when
 * its workers or its admin listener cannot start.
 * @param file - the configuration file, read again on SIGHUP
 * @param loaded - its validated content
 */
export function runPrimary(file: string, loaded: LoadedConfig): void {
  void new Primary(file, loaded).start();
}

class Primary {
  /** The group's stdout: the primary's lines and the workers' relayed ones. */
  private readonly out = pino.destination({ dest: 1, sync: false });
  private readonly logger: Logger;
  /** Where the group's lines go through: `out`, or pino-pretty in front of it (`log.format`). */
  private readonly sink: LineSink & DestinationStream;
  private readonly relay: LineRelay;
  private readonly errors = new LineRelay(process.stderr);
  private readonly registry = new Registry();
  private readonly metrics = createPrimaryMetrics(this.registry);
  private readonly admin: Server;
  /** Health checks run here once for the group; `GET /upstreams` combines the workers. */
  private readonly pools: GroupUpstreams;
  private readonly members = new Map<number, Member>();
  /** `GET /usage/top` (SPEC §21), read from the shared Redis. */
  private readonly tops = new GroupTopCallers(() => this.current.config);
  /** `reload.watch` (SPEC §20). */
  private readonly follower: ConfigFollower;
  private readonly count: number;
  private current: LoadedConfig;
  private queue: Promise<void> = Promise.resolve();
  private stopping = false;
  private sequence = 0;
  private apiPort = 0;
  private decisionPort = 0;

  constructor(
    private readonly file: string,
    loaded: LoadedConfig,
  ) {
    this.current = loaded;
    this.count = workerCount(loaded.config.workers);
    this.sink =
      loaded.config.log.format === "pretty"
        ? (prettyDestination(this.out, ["debug", "trace"].includes(loaded.config.log.level)) as LineSink &
            DestinationStream)
        : this.out;
    this.relay = new LineRelay(this.sink);
    this.logger = createLogger(loaded.config.log.level, this.sink, { pid: process.pid });
    this.follower = new ConfigFollower(file, this.logger, () => this.serialise(() => this.reload("watch")));
    this.pools = new GroupUpstreams(
      this.registry,
      this.logger,
      () => [...this.members.values()].filter((m) => m.listening),
      () => ++this.sequence,
    );
    this.admin = createAdminServer({
      registry: { contentType: this.registry.contentType, metrics: () => this.groupMetrics() },
      ready: () => this.ready(),
      upstreams: () => this.pools.snapshot(),
      routes: [this.tops.route],
    });
  }

  async start(): Promise<void> {
    cluster.setupPrimary({ silent: true, serialization: "advanced" });
    cluster.on("exit", (worker, code, signal) => this.onExit(worker.id, code, signal));
    process.on("SIGTERM", () => this.stop("SIGTERM"));
    process.on("SIGINT", () => this.stop("SIGINT"));
    process.on("SIGHUP", () => this.serialise(() => this.reload("SIGHUP")));
    const forks = Array.from({ length: this.count }, () => this.fork());
    const started = await Promise.all(forks);
    if (this.stopping) return;
    const admin = this.current.config.admin;
    try {
      if (started.includes(null)) throw new Error("a worker could not start (its own line says why)");
      await listenOn(this.admin, "admin", admin.port, admin.host);
      this.pools.configure(this.current);
    } catch (err) {
      const fields = err instanceof ListenError ? err.toFields() : {};
      this.logger.fatal({ ...fields, err: { message: (err as Error).message } }, "gateway could not start");
      this.stopping = true;
      for (const m of this.members.values()) m.send({ type: "gw:stop" });
      return this.exitWhenAlone(1);
    }
    this.logger.info(
      {
        apiPort: this.apiPort,
        decisionPort: this.decisionPort,
        adminPort: (this.admin.address() as AddressInfo).port,
        routes: this.current.config.routes.length,
        workers: this.count,
        workerPids: [...this.members.values()].map((m) => m.pid),
        configHash: hashOf(this.current),
      },
      "gateway listening",
    );
    this.logger.flush();
    setConfigInfo(this.metrics.configInfo, hashOf(this.current));
    this.follower.update(this.current.config, this.current.baseDir);
  }

  /** Runs `task` after every task queued before it (worker starts, reloads). */
  private serialise(task: () => Promise<void>): void {
    this.queue = this.queue.then(task).catch((err: unknown) => {
      this.logger.error({ err: { message: (err as Error).message } }, "primary task failed");
    });
  }

  /** Forks one worker and starts it on the configuration in force; null when it did not start. */
  private async fork(): Promise<Member | null> {
    const member = new Member(cluster.fork());
    this.members.set(member.worker.id, member);
    this.relay.add(member.worker.process.stdout!);
    this.errors.add(member.worker.process.stderr!);
    const hello = await member.waitFor(is("gw:hello"), START_TIMEOUT_MS);
    const { config, baseDir } = this.current;
    const start = { type: "gw:start" as const, config, baseDir, hash: hashOf(this.current) };
    const up = hello === null ? null : await member.ask(start, is("gw:listening"), START_TIMEOUT_MS);
    if (up === null) {
      if (!member.exited) member.worker.process.kill("SIGKILL");
      return null;
    }
    this.apiPort = up.apiPort;
    this.decisionPort = up.decisionPort;
    this.pools.greet(member);
    this.logger.info({ workerPid: member.pid }, "worker listening");
    return member;
  }

  private onExit(id: number, code: number | null, signal: string | null): void {
    const member = this.members.get(id);
    this.members.delete(id);
    if (member === undefined || this.stopping) return;
    // A worker that never served failed to start: `fork` reports it.
    if (!member.served) return;
    const how = signal !== null ? `signal ${signal}` : `exit code ${String(code)}`;
    this.logger.warn(
      { workerPid: member.pid, exitCode: code, signal },
      `worker ${member.pid} exited unexpectedly (${how}); starting a replacement`,
    );
    this.logger.flush();
    this.serialise(() => this.replace());
  }

  /** Starts a worker in place of one that died, retrying each second while it cannot start. */
  private async replace(): Promise<void> {
    while (!this.stopping) {
      if ((await this.fork()) !== null) return;
      this.logger.error("replacement worker could not start; trying again in 1 s");
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  /**
   * SIGHUP or `reload.watch` (SPEC §20): validate once here, build in every worker, apply in all of
   * them or in none.
   */
  private async reload(trigger: ReloadTrigger): Promise<void> {
    if (this.stopping) return;
    const started = systemClock.monotonicMs();
    const serving = [...this.members.values()].filter((m) => m.listening);
    const result = await reloadGroup(this.file, this.count, serving, ++this.sequence, this.pools.states());
    this.follower.update(result.ok ? result.next.config : this.current.config, this.current.baseDir);
    if (!result.ok) return this.rejected(result.message, trigger);
    this.current = result.next;
    this.metrics.configReloads.inc({ result: "success" });
    // The workers built new upstreams, which start healthy: they get every state again.
    this.pools.configure(result.next);
    const configHash = hashOf(result.next);
    setConfigInfo(this.metrics.configInfo, configHash);
    const durationMs = Math.round(systemClock.monotonicMs() - started);
    this.logger.info(
      { file: this.file, trigger, workers: serving.length, durationMs, configHash },
      "configuration reloaded",
    );
    if (workerCount(result.next.config.workers) !== this.count) {
      this.logger.warn({ workers: this.count }, "a changed `workers` takes effect at the next start");
    }
    this.logger.flush();
  }

  private rejected(message: string, trigger: ReloadTrigger): void {
    this.metrics.configReloads.inc({ result: "error" });
    this.logger.error(
      { file: this.file, trigger, err: { message } },
      "configuration reload rejected; keeping the running configuration",
    );
    this.logger.flush();
  }

  private ready(): boolean {
    const serving = [...this.members.values()].filter((m) => m.listening);
    return !this.stopping && serving.length > 0 && serving.every((m) => m.ready);
  }

  private async groupMetrics(): Promise<string> {
    const id = ++this.sequence;
    const live = [...this.members.values()].filter((m) => m.listening);
    const answers = await Promise.all(
      live.map((m) => m.ask({ type: "gw:metrics", id }, is("gw:metrics", id), METRICS_TIMEOUT_MS)),
    );
    const sources: MetricSource[] = [
      {
        worker: "primary",
        metrics: (await this.registry.getMetricsAsJSON()) as unknown as MetricSource["metrics"],
      },
    ];
    answers.forEach((a, i) => {
      if (a !== null) sources.push({ worker: String(live[i]!.pid), metrics: a.metrics });
    });
    return combineMetrics(sources);
  }

  private stop(signal: string): void {
    if (this.stopping) return;
    this.stopping = true;
    this.logger.info({ signal }, "shutting down");
    this.follower.close();
    this.admin.close();
    this.tops.close();
    void this.pools.stop();
    for (const m of this.members.values()) m.send({ type: "gw:stop" });
    const deadline = setTimeout(() => {
      for (const m of this.members.values()) {
        this.logger.warn({ workerPid: m.pid }, "worker still running after the grace period; killing it");
        m.worker.process.kill("SIGKILL");
      }
    }, this.current.config.listen.grace_ms + STOP_MARGIN_MS);
    deadline.unref();
    void this.exitWhenAlone(0);
  }

  /** Exits with `code` once every worker has exited and its last lines are out. */
  private async exitWhenAlone(code: number): Promise<void> {
    while (this.members.size > 0) await new Promise((r) => cluster.once("exit", r));
    // The workers' last lines may still be in their pipes (paused while stdout was full).
    await this.relay.drained(LAST_LINES_MS);
    if (code === 0) this.logger.info("gateway stopped");
    // end() writes what is buffered, then closes; a reader that never reads does not hold us.
    this.out.once("close", () => process.exit(code));
    this.out.end();
    setTimeout(() => process.exit(code), LAST_LINES_MS).unref();
  }
}
