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
import { MemoryAdminStore } from "./admin-store.js";
import { Overrides } from "./overrides.js";
import { RedisAdminStore } from "./redis-admin-store.js";
import { UsageControl } from "./usage-control.js";
import type { TopCallersReader } from "./top-callers.js";

/** Dependencies of {@link createLimiter}. */
export interface LimiterDeps {
  clock: Clock;
  metrics: GatewayMetrics;
  logger: Logger;
  /** Time between Redis probes during an outage (ms). @default 1000 */
  probeIntervalMs?: number;
  /** Time between polls of the store's usage changes (ms, SPEC §21). @default 400 */
  usagePollMs?: number;
}

/** A limiter plus its readiness (for `/readyz`). */
export interface LimiterHandle {
  limiter: Limiter;
  /**
   * The store without the rejection cache (the failover wrapper, or the memory store): what usage
   * reads peek (SPEC §21), so they never disturb the cache's entries.
   */
  store: Limiter;
  /**
   * Overrides and resets (SPEC §21); the caller enables it (with `admin.token_file`) and closes it
   * with the limiter.
   */
  usage: UsageControl;
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
    const overrides = new Overrides();
    const usage = new UsageControl({
      store: new MemoryAdminStore(overrides, memory, () => deps.clock.nowMs()),
      overrides,
      cache: null,
      logger: deps.logger,
    });
    return {
      limiter: memory,
      store: memory,
      usage,
      top: memory,
      ready: () => true,
      started: () => Promise.resolve(),
    };
  }
  const store = new RedisStore({ redis, logger: deps.logger });
  // Each replica enforces ceil(limit / expected_replicas) while Redis is down.
  const fallback = new MemoryStore({
    clock: deps.clock,
    maxKeys: rl.memory.max_keys,
    limitDivisor: rl.expected_replicas,
  });
  const spentQuotas = new SpentQuotas({ maxKeys: rl.memory.max_keys, limitDivisor: rl.expected_replicas });
  const failover = new FailoverLimiter({
    primary: store,
    fallback,
    spentQuotas,
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
    clock: deps.clock,
  });
  // SPEC §21: overrides and resets reach every replica by a poll of the store's change counter.
  const usage = new UsageControl({
    store: new RedisAdminStore(
      store.client,
      `${redis.key_prefix}:`,
      Math.max(1000, redis.command_timeout_ms),
    ),
    overrides: new Overrides(),
    // What this replica remembers of a changed identity: refusals, and for failing open its
    // fallback counts and the calendar counts last seen (a reset quota is not spent any more).
    cache: {
      forget(identity) {
        limiter.forget(identity);
        // null: which identities changed is not known (the first poll, or one too far behind).
        spentQuotas.forget(identity);
        fallback.forgetWhere(identity === null ? () => true : (k) => k.startsWith(`{${identity}}`));
      },
    },
    logger: deps.logger,
    ...(deps.usagePollMs === undefined ? {} : { intervalMs: deps.usagePollMs }),
  });
  return {
    limiter,
    store: failover,
    usage,
    top: store,
    ready: () => open || failover.healthy,
    started: () => store.started(),
  };
}
