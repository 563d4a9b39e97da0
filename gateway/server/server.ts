/**
 * A gateway instance: the API listener, the admin listener, its registry and its runtime.
 * Many instances can live in one process (tests): nothing here is a module singleton.
 */
import type { Server } from "node:http";
import type https from "node:https";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import { Registry } from "prom-client";
import { createAdminServer } from "./admin.js";
import { endpointStates, upstreamLoads } from "../core/upstream-gauges.js";
import { UsageAdmin, type AdminAnswer, type AdminCall } from "./usage-admin.js";
import { HttpDrain } from "./http-drain.js";
import { listenOn } from "./listen.js";
import { systemClock, type Clock } from "../base/clock.js";
import { loadConfig, type LoadedConfig } from "../config/load.js";
import { hashOf } from "../config/named-files.js";
import { AccessLog } from "../observability/access-log.js";
import { createLogger } from "../observability/logger.js";
import { createMetrics, setConfigInfo, type GatewayMetrics } from "../observability/metrics.js";
import { RequestMetrics } from "../observability/request-metrics.js";
import { TracingObserver } from "../observability/tracing/observer.js";
import { Pipeline } from "../core/pipeline.js";
import type { GatewayConfig } from "../config/schema.js";
import { HealthChecker, type HealthReport } from "../proxy/health-checker.js";
import type { UpstreamSnapshot } from "../proxy/upstream-snapshot.js";
import { activateRuntime, buildRuntime, releaseRuntime, type Runtime } from "../core/runtime.js";
import { createApiListener } from "../transport/api-listener.js";
import { DecisionTransport } from "../transport/decision.js";
import { createDecisionListener } from "../transport/decision-listener.js";
import { Http1Transport } from "../transport/http1.js";
import { Http2Transport } from "../transport/http2.js";
import { serverTls } from "../transport/server-tls.js";
import { VERSION } from "../base/version.js";

/** Options of {@link createGateway}. */
export interface GatewayOptions {
  /** Defaults to the system clock. */
  clock?: Clock;
  /** Defaults to a pino logger at `log.level` on stdout. */
  logger?: Logger;
  /** Defaults to a fresh registry. */
  registry?: Registry;
  /**
   * Bind the admin listener. A cluster worker does not: its primary serves `/metrics` for the
   * whole process group (SPEC §15). @default true
   */
  admin?: boolean;
  /**
   * Run the active health checks of the upstreams here. A cluster worker does not: its primary
   * probes once for the group and sends the results ({@link Gateway.applyHealth}). @default true
   */
  healthChecks?: boolean;
}

/** A configuration built and checked, not yet serving (SPEC §15: applied by every worker or none). */
export interface PreparedReload {
  /** New requests start on it from now on. */
  commit(): void;
  /** Releases what it built that the running configuration does not use. */
  abort(): void;
}

/** What started a reload, named in its log line: a signal or `reload.watch` (SPEC §20). */
export type ReloadTrigger = "SIGHUP" | "watch";

/** Bound addresses after {@link Gateway.listen}. */
export interface GatewayAddresses {
  /** 0 with `listen.enabled: false`. */
  apiPort: number;
  adminPort: number;
  /** The decision listener's port (SPEC §23), 0 without a `decision` block. */
  decisionPort: number;
}

/** A running gateway. */
export interface Gateway {
  readonly metrics: GatewayMetrics;
  readonly registry: Registry;
  readonly logger: Logger;
  /** The configuration new requests start on. */
  readonly runtime: Runtime;
  /** Applies active health results (a cluster primary's) to the configuration in force. */
  applyHealth(reports: readonly HealthReport[]): void;
  /** `GET /upstreams` of this process (SPEC §16). */
  upstreams(): Record<string, UpstreamSnapshot>;
  /** Answers a `/usage` or `/overrides` call (SPEC §21): the admin listener's, or a primary's. */
  usage(call: AdminCall): Promise<AdminAnswer>;
  /** Hands buffered access lines to the log destination now (they otherwise go within 1 s). */
  flushAccessLog(): void;
  /** Binds the listeners (`listen`, `decision.listen`, `admin`); a port is 0 for a listener not bound. */
  listen(): Promise<GatewayAddresses>;
  /**
   * Validates `file` and swaps the runtime atomically; on error the running config stays.
   * @returns true when the new config is in effect
   */
  reload(file: string, trigger?: ReloadTrigger): Promise<boolean>;
  /**
   * Builds a validated configuration (its files read: tokens, certificates) without applying it;
   * {@link reload} is `loadConfig` + `prepare` + `commit`.
   * @throws Error when a file the configuration names cannot be loaded
   */
  prepare(next: LoadedConfig): PreparedReload;
  /**
   * Graceful stop: refuse new connections, let in-flight requests finish within `graceMs`
   * (default `listen.grace_ms`), close idle keep-alive sockets, release Redis and agents.
   */
  close(graceMs?: number): Promise<void>;
}

/**
 * Builds a gateway from a loaded configuration.
 * @throws Error when a referenced file (tokens) cannot be loaded
 */
export function createGateway(loaded: LoadedConfig, options: GatewayOptions = {}): Gateway {
  const config = loaded.config;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config.log.level, undefined, {}, config.log.format);
  const registry = options.registry ?? new Registry();
  const metrics = createMetrics(registry, VERSION);
  const configHash = hashOf(loaded);
  setConfigInfo(metrics.configInfo, configHash);
  const pipeline = new Pipeline({ clock, metrics, logger });
  const accessLog = new AccessLog(logger, clock);
  // Finish observers, in order: every request's end is told to each. The tracing observer only
  // looks at requests that have spans (none while tracing is off).
  const observers = [new RequestMetrics(metrics, pipeline.hot), accessLog, new TracingObserver()];
  const writerDeps = { pipeline, clock, metrics, logger, observers, runtime: () => runtime };
  const h1 = new Http1Transport(writerDeps);
  const h2 = new Http2Transport(writerDeps);
  const deps = { clock, metrics, logger, baseDir: loaded.baseDir };
  // Files first: a bad certificate or key stops the start before anything listens.
  const tls = serverTls(config, loaded.baseDir);
  let runtime = buildRuntime(config, deps);
  /** Replaced configurations whose calls have not all finished (SPEC §7: never cut by a reload). */
  const retiring = new Set<Runtime>();
  metrics.pool.states.current = () => endpointStates(runtime);
  metrics.pool.states.loads = () => upstreamLoads(runtime);
  const applyHealth = (reports: readonly HealthReport[]): void => {
    for (const r of reports) runtime.upstreams.get(r.upstream)?.setHealthy(r.endpoint, r.healthy);
  };
  const probesFor = (c: GatewayConfig, baseDir: string, known?: HealthChecker): HealthChecker | null =>
    options.healthChecks === false
      ? null
      : new HealthChecker(
          c,
          { checks: metrics.pool.healthChecks, logger, baseDir, clock, onChange: (r) => applyHealth([r]) },
          known?.states(),
        );
  let probes = probesFor(config, loaded.baseDir);

  const l = config.listen;
  const api = createApiListener(config, tls, h1, h2);
  const drain = new HttpDrain(api);
  const decision =
    config.decision === undefined ? null : createDecisionListener(config, new DecisionTransport(writerDeps));
  const decisionDrain = decision === null ? null : new HttpDrain(decision);
  // Access lines are buffered (16 KiB, then sonic-boom's 4 KiB) so the hot path never writes
  // synchronously; flush at least once a second so a quiet gateway's lines still reach the log
  // pipeline promptly.
  const flushTimer = setInterval(() => {
    accessLog.flush();
    logger.flush();
  }, 1000);
  flushTimer.unref();
  const usageAdmin = new UsageAdmin({ runtime: () => runtime, logger, metrics });
  const admin = createAdminServer({
    registry,
    ready: () => runtime.limiter.ready(),
    upstreams: async () => gateway.upstreams(),
    usage: (call) => usageAdmin.handle(call),
  });
  const withAdmin = options.admin ?? true;

  function prepare(next: LoadedConfig): PreparedReload {
    const old = runtime;
    // Certificates are re-read and checked first: a bad one keeps the running configuration.
    const nextTls = tls === null ? null : serverTls(next.config, next.baseDir);
    const built = buildRuntime(next.config, { ...deps, baseDir: next.baseDir }, old);
    // Probes restart on the new configuration, knowing what the old ones found.
    const nextProbes = probesFor(next.config, next.baseDir, probes ?? undefined);
    return {
      commit() {
        void probes?.stop();
        probes = nextProbes;
        // New connections get the new certificate; open ones keep theirs.
        if (nextTls !== null) (api as https.Server).setSecureContext(nextTls);
        const replaced = runtime;
        runtime = built;
        if (probes !== null) applyHealth(probes.states());
        probes?.start();
        activateRuntime(built);
        setConfigInfo(metrics.configInfo, hashOf(next));
        // SPEC §7: calls started on the replaced configuration finish on it, however long they
        // last; what no live configuration uses is released when the last of them ends.
        retiring.add(replaced);
        replaced.generation.retire(() => {
          if (retiring.delete(replaced)) void releaseRuntime(replaced, [runtime, ...retiring]);
        });
      },
      abort() {
        void nextProbes?.stop();
        void releaseRuntime(built, [runtime, ...retiring]);
      },
    };
  }

  const gateway: Gateway = {
    metrics,
    registry,
    logger,
    get runtime() {
      return runtime;
    },
    applyHealth,
    upstreams() {
      const out: Record<string, UpstreamSnapshot> = {};
      for (const [name, u] of runtime.upstreams) out[name] = u.snapshot();
      return out;
    },
    usage: (call) => usageAdmin.handle(call),
    flushAccessLog() {
      accessLog.flush();
    },
    async listen() {
      // A store that refuses the configuration (Redis `SELECT` of a missing database) stops the start.
      await runtime.limiter.started();
      try {
        if (l.enabled) await listenOn(api, "api", l.port, l.host);
        const d = config.decision;
        if (decision !== null) await listenOn(decision, "decision", d!.listen.port, d!.listen.host);
        if (withAdmin) await listenOn(admin, "admin", config.admin.port, config.admin.host);
      } catch (err) {
        // Never one listener without the others (nor without /healthz and /metrics): the caller
        // stops the process.
        await Promise.all([closeServer(api as Server), decision === null ? null : closeServer(decision)]);
        throw err;
      }
      probes?.start();
      const portOf = (s: { address(): unknown; listening: boolean } | null): number =>
        s !== null && s.listening ? (s.address() as AddressInfo).port : 0;
      const addresses = { apiPort: portOf(api), adminPort: portOf(admin), decisionPort: portOf(decision) };
      logger.info({ ...addresses, routes: config.routes.length, configHash }, "gateway listening");
      logger.flush();
      return addresses;
    },
    prepare,
    async reload(file, trigger = "SIGHUP") {
      try {
        const next = loadConfig(file);
        prepare(next).commit();
        metrics.configReloads.inc({ result: "success" });
        logger.info({ file, trigger, configHash: hashOf(next) }, "configuration reloaded");
        logger.flush(); // rare and operator-facing: do not leave it in the async log buffer
        return true;
      } catch (err) {
        metrics.configReloads.inc({ result: "error" });
        logger.error(
          { file, trigger, err: { message: (err as Error).message } },
          "configuration reload rejected; keeping the running configuration",
        );
        logger.flush();
        return false;
      }
    },
    async close(graceMs = runtime.config.listen.grace_ms) {
      clearInterval(flushTimer);
      pipeline.close();
      await probes?.stop();
      await Promise.all([drain.drain(graceMs), decisionDrain?.drain(graceMs), closeServer(admin)]);
      for (const old of retiring) await releaseRuntime(old, [runtime]);
      retiring.clear();
      await releaseRuntime(runtime);
      accessLog.flush();
      logger.info("gateway stopped");
      logger.flush();
    },
  };
  return gateway;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
  });
}
