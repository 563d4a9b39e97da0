/**
 * The metric families of upstream pools (SPEC §16, §17): endpoint availability, calls, time to the
 * response head and failures per endpoint,
 * health-check probes, ejections, panic routing, retries, calls refused by `max_in_flight` or shed
 * (SPEC §18), and each upstream's concurrency limit and calls in flight. Label values are configuration names
 * (upstream) and endpoints as configured (`host:port`), never request data.
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { UpstreamErrorReason } from "../base/results.js";
import { HotCounter, HotHistogram, type HotCount, type HotDistribution } from "./hot-families.js";

/** One endpoint's state as `gateway_upstream_endpoint_available` reads it when collected. */
export interface EndpointAvailability {
  readonly upstream: string;
  readonly endpoint: string;
  readonly available: boolean;
}

/** One upstream's load as the SPEC §18 gauges read it when collected. */
export interface UpstreamLoad {
  readonly upstream: string;
  /** The effective concurrency limit, or null without one (no series). */
  readonly limit: number | null;
  /** Calls admitted and not ended: the count the limit applies to (SPEC §18). */
  readonly inFlight: number;
}

/** Where the gauges read the upstreams of the configuration in force. */
export interface EndpointStates {
  /** Every endpoint of every upstream, or none before a configuration is built. */
  current: () => Iterable<EndpointAvailability>;
  /** Every upstream's limit and in-flight count, or none before a configuration is built. */
  loads: () => Iterable<UpstreamLoad>;
}

/** The probes' counter: a gateway's, or with workers the primary's (it alone probes). */
export function createHealthCheckMetric(registry: Registry): Counter<"upstream" | "endpoint" | "result"> {
  return new Counter({
    name: "gateway_upstream_health_checks_total",
    help: "Active health-check probes by upstream, endpoint and result (pass, fail).",
    labelNames: ["upstream", "endpoint", "result"],
    registers: [registry],
  });
}

/** Upstream pool families of one gateway. */
export interface UpstreamPoolMetrics {
  endpointRequests: HotCounter<"upstream" | "endpoint">;
  endpointDuration: HotHistogram<"upstream" | "endpoint">;
  endpointErrors: HotCounter<"upstream" | "endpoint" | "reason">;
  endpointAvailable: Gauge<"upstream" | "endpoint">;
  healthChecks: Counter<"upstream" | "endpoint" | "result">;
  ejections: Counter<"upstream" | "endpoint">;
  panic: Counter<"upstream">;
  retries: Counter<"upstream" | "result">;
  overloaded: Counter<"upstream" | "priority">;
  concurrencyLimit: Gauge<"upstream">;
  inFlight: Gauge<"upstream">;
  /** Set by the gateway once its configuration is built. */
  states: EndpointStates;
}

/** One endpoint's children of the per-endpoint families, bound once when the endpoint is made. */
export interface EndpointMetrics {
  /** `gateway_upstream_endpoint_requests_total{upstream,endpoint}`. */
  readonly requests: HotCount;
  /** `gateway_upstream_endpoint_duration_seconds{upstream,endpoint}` (s). */
  readonly duration: HotDistribution;
  /** `gateway_upstream_endpoint_errors_total{upstream,endpoint,reason}`, one child per reason. */
  readonly errors: Readonly<Record<UpstreamErrorReason, HotCount>>;
}

/** Binds the children of one endpoint (named `host:port`) of `upstream`. */
export function endpointMetrics(
  pool: UpstreamPoolMetrics,
  upstream: string,
  endpoint: string,
): EndpointMetrics {
  const error = (reason: UpstreamErrorReason) => pool.endpointErrors.labels({ upstream, endpoint, reason });
  return {
    requests: pool.endpointRequests.labels({ upstream, endpoint }),
    duration: pool.endpointDuration.labels({ upstream, endpoint }),
    errors: { connect: error("connect"), timeout: error("timeout"), reset: error("reset") },
  };
}

/**
 * Creates and registers the upstream pool families on `registry`.
 * @param latencyBuckets - the upper bounds (s) of the gateway's latency histograms
 */
export function createUpstreamPoolMetrics(
  registry: Registry,
  latencyBuckets: readonly number[],
): UpstreamPoolMetrics {
  const registers = [registry];
  const states: EndpointStates = { current: () => [], loads: () => [] };
  return {
    endpointRequests: new HotCounter({
      name: "gateway_upstream_endpoint_requests_total",
      help: "Calls sent to each endpoint of each upstream (every attempt).",
      labelNames: ["upstream", "endpoint"],
      registers,
    }),
    endpointDuration: new HotHistogram({
      name: "gateway_upstream_endpoint_duration_seconds",
      help: "Time from sending one try to an endpoint to its response headers, by upstream and endpoint.",
      labelNames: ["upstream", "endpoint"],
      buckets: latencyBuckets,
      registers,
    }),
    endpointErrors: new HotCounter({
      name: "gateway_upstream_endpoint_errors_total",
      help: "Tries that failed at an endpoint, by upstream, endpoint and reason (connect, timeout, reset).",
      labelNames: ["upstream", "endpoint", "reason"],
      registers,
    }),
    endpointAvailable: new Gauge({
      name: "gateway_upstream_endpoint_available",
      help: "1 while an endpoint is available (healthy and not ejected), else 0.",
      labelNames: ["upstream", "endpoint"],
      registers,
      collect() {
        this.reset();
        for (const e of states.current()) {
          this.set({ upstream: e.upstream, endpoint: e.endpoint }, e.available ? 1 : 0);
        }
      },
    }),
    healthChecks: createHealthCheckMetric(registry),
    ejections: new Counter({
      name: "gateway_upstream_ejections_total",
      help: "Endpoints ejected by outlier detection, by upstream and endpoint.",
      labelNames: ["upstream", "endpoint"],
      registers,
    }),
    panic: new Counter({
      name: "gateway_upstream_panic_total",
      help: "Calls routed with no endpoint available (spread over all endpoints), by upstream.",
      labelNames: ["upstream"],
      registers,
    }),
    retries: new Counter({
      name: "gateway_upstream_retries_total",
      help: "Retries by upstream and result (retried, budget_exhausted: a retry the budget refused).",
      labelNames: ["upstream", "result"],
      registers,
    }),
    overloaded: new Counter({
      name: "gateway_upstream_overloaded_total",
      help: "Calls answered 503 upstream_overloaded before the limiter, by upstream and caller priority.",
      labelNames: ["upstream", "priority"],
      registers,
    }),
    concurrencyLimit: new Gauge({
      name: "gateway_upstream_concurrency_limit",
      help: "The upstream's concurrency limit per process: max_in_flight, the adaptive limit, or the smaller.",
      labelNames: ["upstream"],
      registers,
      collect() {
        this.reset();
        for (const l of states.loads()) if (l.limit !== null) this.set({ upstream: l.upstream }, l.limit);
      },
    }),
    inFlight: new Gauge({
      name: "gateway_upstream_in_flight",
      help: "Calls admitted to the upstream and not yet ended in this process (the count its concurrency limit applies to).",
      labelNames: ["upstream"],
      registers,
      collect() {
        this.reset();
        for (const l of states.loads()) this.set({ upstream: l.upstream }, l.inFlight);
      },
    }),
    states,
  };
}
