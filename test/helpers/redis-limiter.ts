/**
 * Builds what `createLimiter` needs for store-level tests against a test Redis: a validated
 * configuration, a fresh metrics registry and a logger whose lines the test can read.
 */
import { Registry } from "prom-client";
import type { Logger } from "pino";
import {
  gatewayConfigSchema,
  type GatewayConfig,
  type GatewayConfigInput,
} from "../../gateway/config/schema.js";
import { createLogger } from "../../gateway/observability/logger.js";
import { createMetrics, type GatewayMetrics } from "../../gateway/observability/metrics.js";

type RateLimitsInput = GatewayConfigInput["rate_limits"];

/** A full configuration whose `rate_limits` is `rateLimits` (one upstream, one route, static auth). */
export function configWith(rateLimits: RateLimitsInput): GatewayConfig {
  return gatewayConfigSchema.parse({
    upstreams: { u: { url: "http://127.0.0.1:1" } },
    routes: [{ prefix: "/", upstream: "u" }],
    auth: { static: { tokens_file: "unused.yaml" } },
    rate_limits: rateLimits,
  });
}

/** A logger that keeps every line (parsed) in `lines`. */
export function captureLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger("debug", { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, lines };
}

/** Metrics on their own registry, plus the registry to read them back. */
export function testMetrics(): { metrics: GatewayMetrics; registry: Registry } {
  const registry = new Registry();
  return { metrics: createMetrics(registry, "test"), registry };
}

/** Current value of a metric (summed over label sets). */
export async function metricValue(registry: Registry, name: string): Promise<number> {
  const m = await registry.getSingleMetric(name)?.get();
  return (m?.values ?? [])
    .filter((v) => !("metricName" in v) || v.metricName === name)
    .reduce((s, v) => s + v.value, 0);
}
