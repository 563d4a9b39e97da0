/**
 * prom-client's default process metrics, less the three gauges whose names break the Prometheus
 * naming rule that only counters end in `_total` (`promtool check metrics` refuses them):
 * `nodejs_active_handles_total`, `nodejs_active_requests_total` and
 * `nodejs_active_resources_total`. Each is the sum of a gauge prom-client exports beside it
 * (`nodejs_active_handles{type}`, `nodejs_active_requests{type}`, `nodejs_active_resources{type}`),
 * so `sum(nodejs_active_handles)` says what the first said.
 */
import { collectDefaultMetrics, type Registry } from "prom-client";

/** The default gauges left out, by name. */
export const MISNAMED_DEFAULT_GAUGES = [
  "nodejs_active_handles_total",
  "nodejs_active_requests_total",
  "nodejs_active_resources_total",
] as const;

/** Registers prom-client's default process metrics on `registry`, less {@link MISNAMED_DEFAULT_GAUGES}. */
export function collectProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  for (const name of MISNAMED_DEFAULT_GAUGES) registry.removeSingleMetric(name);
}
