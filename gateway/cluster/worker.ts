/**
 * A cluster worker (SPEC §15): the ordinary gateway on the shared API port (and decision port,
 * SPEC §23: node:cluster shares every port a worker binds), without an admin
 * listener (its primary answers `/metrics`, `/healthz` and `/readyz` for the group), configured
 * only by its primary: it never reads the configuration file, so every worker serves what the
 * primary validated, and a replacement starts on the configuration in force, not on whatever the
 * file holds now.
 *
 * Signals: SIGTERM and SIGINT drain and exit 0, as in a single gateway (a terminal's Ctrl-C reaches
 * every process of the group; the primary then sees its workers leave as it stops them). SIGHUP is
 * ignored: reloads come from the primary. A worker whose primary is gone (its channel closed)
 * drains and exits too.
 */
import { deepFreeze } from "../config/load.js";
import type { GatewayConfig } from "../config/schema.js";
import { ListenError } from "../server/listen.js";
import { abandonOutput, createLogger } from "../observability/logger.js";
import { createGateway, type Gateway, type PreparedReload } from "../server/server.js";
import { isGatewayMessage, type FromWorker, type MetricJson, type ToWorker } from "./messages.js";

/** Why a started worker stops when its IPC channel to the primary closes. */
const PRIMARY_GONE = "primary gone";

/** How often the worker looks at its readiness to report a change (ms). */
const READY_POLL_MS = 250;

function send(message: FromWorker): void {
  // A primary that went away is noticed by `disconnect`; a failed send needs no handling here.
  if (process.connected) process.send!(message, undefined, {}, () => undefined);
}

function loadedOf(m: { config: GatewayConfig; baseDir: string; hash: string }) {
  return { config: deepFreeze(m.config), baseDir: m.baseDir, hash: m.hash };
}

/** Waits for the primary's `gw:start`, then serves until told to stop. Never resolves. */
export function runWorker(): void {
  process.on("SIGHUP", () => undefined);
  const onStart = (m: unknown): void => {
    if (!isGatewayMessage<ToWorker>(m)) return;
    if (m.type === "gw:stop") process.exit(0); // the group stops before this worker started
    if (m.type !== "gw:start") return;
    process.off("message", onStart);
    void start(m);
  };
  process.on("message", onStart);
  send({ type: "gw:hello" });
  // Told to stop before starting: nothing to drain.
  process.once("disconnect", () => process.exit(0));
}

async function start(m: Extract<ToWorker, { type: "gw:start" }>): Promise<void> {
  const loaded = loadedOf(m);
  const logger = createLogger(loaded.config.log.level, undefined, { pid: process.pid });
  let gateway: Gateway;
  let apiPort: number;
  let decisionPort: number;
  try {
    gateway = createGateway(loaded, { logger, admin: false, healthChecks: false });
    ({ apiPort, decisionPort } = await gateway.listen());
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    const fields = err instanceof ListenError ? err.toFields() : {};
    logger.fatal({ ...fields, err: { message: error } }, "worker could not start");
    logger.flush();
    send({ type: "gw:failed", error });
    setImmediate(() => process.exit(1));
    return;
  }
  process.removeAllListeners("disconnect");
  new WorkerControl(gateway).listen();
  send({ type: "gw:listening", apiPort, decisionPort });
}

/** A started worker's side of the protocol. */
class WorkerControl {
  private readonly prepared = new Map<number, PreparedReload>();
  private stopping = false;
  /** Drained: waiting for the last lines to be written before exiting with this status. */
  private exiting: number | null = null;
  private ready: boolean | null = null;

  constructor(private readonly gateway: Gateway) {}

  listen(): void {
    process.on("message", (m: unknown) => {
      if (isGatewayMessage<ToWorker>(m)) void this.onMessage(m);
    });
    process.on("SIGTERM", () => this.stop("SIGTERM"));
    process.on("SIGINT", () => this.stop("SIGINT"));
    process.once("disconnect", () => this.onPrimaryGone());
    const poll = setInterval(() => this.reportReady(), READY_POLL_MS);
    poll.unref();
    this.reportReady();
  }

  private async onMessage(m: ToWorker): Promise<void> {
    switch (m.type) {
      case "gw:prepare":
        try {
          this.prepared.set(m.id, this.gateway.prepare(loadedOf(m)));
          send({ type: "gw:prepared", id: m.id, error: null });
        } catch (err) {
          send({ type: "gw:prepared", id: m.id, error: err instanceof Error ? err.message : String(err) });
        }
        return;
      case "gw:commit":
        this.prepared.get(m.id)?.commit();
        this.prepared.delete(m.id);
        // The new configuration's upstreams start healthy: the primary's probes say otherwise.
        this.gateway.applyHealth(m.health);
        send({ type: "gw:committed", id: m.id });
        return;
      case "gw:abort":
        this.prepared.get(m.id)?.abort();
        this.prepared.delete(m.id);
        return;
      case "gw:metrics":
        // prom-client types `type` as an enum; at run time it is the family's type name.
        send({
          type: "gw:metrics",
          id: m.id,
          metrics: (await this.gateway.registry.getMetricsAsJSON()) as unknown as MetricJson[],
        });
        return;
      case "gw:health":
        this.gateway.applyHealth(m.reports);
        return;
      case "gw:upstreams":
        send({ type: "gw:upstreams", id: m.id, upstreams: this.gateway.upstreams() });
        return;
      case "gw:admin":
        send({ type: "gw:admin", id: m.id, answer: await this.gateway.usage(m.call) });
        return;
      case "gw:stop":
        this.stop("primary");
        return;
      case "gw:start":
        return;
    }
  }

  private reportReady(): void {
    const ready = this.gateway.runtime.limiter.ready();
    if (ready === this.ready) return;
    this.ready = ready;
    send({ type: "gw:ready", ready });
  }

  /**
   * Drains (SPEC §7: in-flight requests finish within `listen.grace_ms`), waits until every line
   * is written to the pipe (exiting with a write in flight could cut a line), and exits 0. A
   * reader that never reads holds the worker until its primary's deadline kills it. Without a
   * primary (it died, before or during the stop: {@link onPrimaryGone}) nobody reads the pipe and
   * nobody would kill the worker, so once drained it drops its unwritten lines and exits: waiting
   * for them (or pino's synchronous flush at exit) kept orphaned workers alive for good
   * (`abandonOutput`).
   */
  private stop(by: string): void {
    if (this.stopping) return;
    this.stopping = true;
    const logger = this.gateway.logger;
    logger.info({ signal: by }, "shutting down");
    logger.flush(); // operator-facing: not left in the buffer for the whole grace period
    this.gateway.close().then(
      () => this.exit(0),
      (err: unknown) => {
        this.gateway.logger.error({ err }, "shutdown failed");
        this.exit(1);
      },
    );
  }

  /** The primary died: stop (or, drained already and writing the last lines, exit now). */
  private onPrimaryGone(): void {
    if (!this.stopping) this.stop(PRIMARY_GONE);
    else if (this.exiting !== null) this.exit(this.exiting);
  }

  /**
   * Exits with `code` once the lines are written, or at once when nobody reads them (the IPC
   * channel to the primary closed: Node clears `process.connected` before `disconnect`).
   */
  private exit(code: number): void {
    this.exiting = code;
    const logger = this.gateway.logger;
    if (process.connected) return logger.flush(() => process.exit(code));
    abandonOutput(logger);
    process.exit(code);
  }
}
