/**
 * Builds the limiter a configuration asks for: the memory store when no Redis is configured,
 * otherwise the Redis store behind the failover wrapper (SPEC §4), and in front of both the cache
 * of the store's rejections (over-limit callers cost no round trip: `rejection-cache.ts`).
 */
import type { Logger } from "pino";
import type { Clock } from "../base/clock.js";
import type { GatewayConfig } from "../config/schema.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import { FailoverLimiter } from "./failover.js";
import type { Limiter } from "./limiter.js";
import { MemoryStore } from "./memory-store.js";
import { hasCalendarWindows, warnIfVolatile } from "./redis-persistence.js";
import { RedisStore } from "./redis-store.js";
import { RejectionCache } from "./rejection-cache.js";
import { SpentQuotas } from "./spent-quotas.js";
import type { TopCallersReader } from "./top-callers.js";

/** Dependencies of {@link createLimiter}. */
export interface LimiterDeps {
  clock: Clock;
  metrics: GatewayMetrics;
  logger: Logger;
  /** Time between Redis probes during an outage (ms). @default 1000 */
  probeIntervalMs?: number;
}

/** A limiter plus its readiness (for `/readyz`). */
export interface LimiterHandle {
  limiter: Limiter;
  /**
   * The top callers the store keeps (SPEC §21 `GET /usage/top`): the memory store's, or Redis's
   * (also while failing open: the sets are the shared ones, read from Redis or not at all).
   */
  top: TopCallersReader;
  /** True when the store answers or the gateway is failing open (SPEC §8 `/readyz`). */
  ready(): boolean;
  /**
   * Settles once the store's first connection attempt has an outcome (bounded by its connect
   * timeout). A store that is down does not stop a start (SPEC §4 `failure_mode`).
   * @throws LimitStoreError (as a rejection) for a configuration the store refuses (`SELECT` of a
   *   database index it does not have)
   */
  started(): Promise<void>;
}

/**
 * @param config - the validated configuration
 * @returns the limiter; the caller closes it (which also closes the Redis connection)
 */
export function createLimiter(config: GatewayConfig, deps: LimiterDeps): LimiterHandle {
  const rl = config.rate_limits;
  const redis = rl.store.redis;
  if (redis === undefined) {
    const memory = new MemoryStore({ clock: deps.clock, maxKeys: rl.memory.max_keys });
    return { limiter: memory, top: memory, ready: () => true, started: () => Promise.resolve() };
  }
  const store = new RedisStore({ redis, logger: deps.logger });
  const failover = new FailoverLimiter({
    primary: store,
    // Each replica enforces ceil(limit / expected_replicas) while Redis is down.
    fallback: new MemoryStore({
      clock: deps.clock,
      maxKeys: rl.memory.max_keys,
      limitDivisor: rl.expected_replicas,
    }),
    spentQuotas: new SpentQuotas({ maxKeys: rl.memory.max_keys, limitDivisor: rl.expected_replicas }),
    failureMode: rl.failure_mode,
    clock: deps.clock,
    metrics: deps.metrics,
    logger: deps.logger,
    ...(deps.probeIntervalMs === undefined ? {} : { probeIntervalMs: deps.probeIntervalMs }),
    // SPEC §8: `/readyz` follows Redis with or without traffic. A dropped connection shows at once;
    // a hung one is found by the PING sent after a quiet interval (bounded by command_timeout_ms).
    connected: () => store.client.status === "ready",
    ping: () => store.ping(),
  });
  if (hasCalendarWindows(rl)) {
    // SPEC §19: a Redis that persists nothing would restart every period's count with itself.
    const call = (command: string, ...args: string[]) => store.client.call(command, ...args);
    void store.started().then(
      () => warnIfVolatile(call, redis, deps.logger),
      () => undefined, // a refused start is the caller's to report
    );
  }
  const open = rl.failure_mode === "open";
  // A request's trace reaches the Redis store only with a call that goes there (its
  // `ratelimit.redis` span): a local answer of the rejection cache or of the fallback records none.
  const limiter = new RejectionCache({
    inner: failover,
    metrics: deps.metrics,
    monotonicMs: () => deps.clock.monotonicMs(),
  });
  return {
    limiter,
    top: store,
    ready: () => open || failover.healthy,
    started: () => store.started(),
  };
}
