/**
 * `/metrics` for a whole process group (SPEC §15), from each worker's `getMetricsAsJSON()` and
 * the primary's own, combined with prom-client's `AggregatorRegistry.aggregate`: counters and
 * histograms are summed over the processes that answered (a dead worker's counts are lost, which
 * Prometheus sees as a counter reset); gauges — `gateway_inflight_requests`,
 * `gateway_ratelimit_store_degraded`, `gateway_build_info` and the process gauges such as
 * `process_resident_memory_bytes` or `nodejs_eventloop_lag_seconds` — keep one series per process
 * with a `worker` label (its PID, or `primary`), since a sum or an average of them would hide the
 * one process that is in trouble.
 */
import { AggregatorRegistry } from "prom-client";
import type { MetricJson } from "./messages.js";

/** One process's families. */
export interface MetricSource {
  /** The `worker` label of its gauges: a PID, or `primary`. */
  worker: string;
  metrics: readonly MetricJson[];
}

/**
 * @returns the Prometheus text of every source combined
 */
export async function combineMetrics(sources: readonly MetricSource[]): Promise<string> {
  const relabelled = sources.map((s) =>
    s.metrics.map((m) => ({
      ...m,
      // Series with distinct `worker` labels never meet, so summing keeps gauges per process.
      aggregator: "sum",
      values:
        m.type === "gauge"
          ? m.values.map((v) => ({ ...v, labels: { ...v.labels, worker: s.worker } }))
          : m.values,
    })),
  );
  return AggregatorRegistry.aggregate(relabelled).metrics();
}
