/**
 * Every metric the gateway exports (SPEC §8), defined in this one file on a registry passed in
 * (no global registry, so tests can run many gateways in one process); the families updated on
 * every request (or every rejected or cached call) are {@link HotCounter}s and
 * {@link HotHistogram}s (plain numbers, same exposition). Names follow Prometheus conventions:
 * `gateway_` prefix, base units (`_seconds`), `_total` on counters. Label values come from
 * configuration names and fixed enumerations only, never from raw paths or tokens.
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { collectProcessMetrics } from "./process-metrics.js";
import { HotCounter, HotHistogram } from "./hot-families.js";
import { createUpstreamPoolMetrics, type UpstreamPoolMetrics } from "./upstream-metrics.js";

/** Latency buckets (s): sub-millisecond to the default upstream timeout. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Limiter/introspection buckets (s): these calls should be fast. */
const FAST_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5];

/** `gateway_config_reloads_total`: a gateway's, or a cluster primary's for its whole group. */
const CONFIG_RELOADS = {
  name: "gateway_config_reloads_total",
  help: "Configuration reloads (SIGHUP or reload.watch) by result (success, error).",
  labelNames: ["result"] as const,
};

/** `gateway_config_info{hash}`: which configuration a process runs (SPEC §20). */
const CONFIG_INFO = {
  name: "gateway_config_info",
  help: "The applied configuration: its hash (configuration and the files it names); always 1.",
  labelNames: ["hash"] as const,
};

/** Makes `hash` the one series of `gateway_config_info`. */
export function setConfigInfo(gauge: Gauge<"hash">, hash: string): void {
  gauge.reset();
  gauge.labels({ hash }).set(1);
}

/** The gateway's metric families. */
export interface GatewayMetrics {
  requests: HotCounter<"route" | "class" | "code">;
  requestDuration: HotHistogram<"route" | "class">;
  upstreamDuration: HotHistogram<"upstream">;
  ratelimitDecisions: HotCounter<"class" | "plan" | "outcome" | "window">;
  planClaimUnknown: Counter;
  storeErrors: Counter<"store" | "reason">;
  storeDuration: HotHistogram<"store">;
  storeDegraded: Gauge;
  localRejections: HotCounter<"class">;
  /** Units spent by calls of classes with a `cost` above 1 or a `charge` (SPEC §22). */
  ratelimitUnits: HotCounter<"class" | "kind">;
  /** Answers of a `charge` class without a usable charge header (SPEC §22). */
  chargeInvalid: Counter<"class">;
  authResults: HotCounter<"result">;
  introspectionRequests: Counter<"result">;
  introspectionDuration: Histogram;
  tokenCacheLookups: HotCounter<"result">;
  jwksFetches: Counter<"result">;
  jwtValidations: HotCounter<"result">;
  upstreamErrors: Counter<"upstream" | "reason">;
  /** Upstream pools (SPEC §16). */
  pool: UpstreamPoolMetrics;
  configReloads: Counter<"result">;
  configInfo: Gauge<"hash">;
  buildInfo: Gauge<"version" | "node_version">;
  /**
   * Requests in flight now: raised by the transport at accept, lowered by the finish observer, a
   * plain number that `gateway_inflight_requests` reads when collected.
   */
  inflightNow: { value: number };
  inflight: Gauge;
  tracingSpansExported: Counter;
  tracingSpansDropped: Counter<"reason">;
}

/**
 * Creates and registers every family on `registry`, plus prom-client's default process metrics
 * (`process-metrics.ts`).
 * @param registry - the gateway instance's registry
 * @param version - package version for `gateway_build_info`
 */
export function createMetrics(registry: Registry, version: string): GatewayMetrics {
  const registers = [registry];
  collectProcessMetrics(registry);
  const inflightNow = { value: 0 };
  const m: GatewayMetrics = {
    requests: new HotCounter({
      name: "gateway_requests_total",
      help: "Requests answered on the API listener, by route prefix, limit class and HTTP status code.",
      labelNames: ["route", "class", "code"],
      registers,
    }),
    requestDuration: new HotHistogram({
      name: "gateway_request_duration_seconds",
      help: "Time from request start to response finish on the API listener.",
      labelNames: ["route", "class"],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    upstreamDuration: new HotHistogram({
      name: "gateway_upstream_duration_seconds",
      help: "Time from sending the request upstream to the upstream's response headers.",
      labelNames: ["upstream"],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    ratelimitDecisions: new HotCounter({
      name: "gateway_ratelimit_decisions_total",
      help: "Rate-limit decisions by class, plan (a configured plan or none), outcome (allowed, limited, shadow_limited, degraded) and the refusing window (month, 60s; none when admitted).",
      labelNames: ["class", "plan", "outcome", "window"],
      registers,
    }),
    planClaimUnknown: new Counter({
      name: "gateway_plan_claim_unknown_total",
      help: "Authenticated calls whose plan claim was not a configured plan's name (treated as absent).",
      registers,
    }),
    storeErrors: new Counter({
      name: "gateway_ratelimit_store_errors_total",
      help: "Limit-store calls that failed, by store and reason (timeout, refused, dns, tls, auth, database, connection, reply).",
      labelNames: ["store", "reason"],
      registers,
    }),
    storeDuration: new HotHistogram({
      name: "gateway_ratelimit_store_duration_seconds",
      help: "Duration of limit-store calls.",
      labelNames: ["store"],
      buckets: FAST_BUCKETS,
      registers,
    }),
    storeDegraded: new Gauge({
      name: "gateway_ratelimit_store_degraded",
      help: "1 while the shared limit store is failing and decisions come from the local fallback.",
      registers,
    }),
    localRejections: new HotCounter({
      name: "gateway_ratelimit_local_rejections_total",
      help: "Calls answered 429 from this process's cache of the store's rejections, without a store call.",
      labelNames: ["class"],
      registers,
    }),
    ratelimitUnits: new HotCounter({
      name: "gateway_ratelimit_units_total",
      help: "Units spent by calls of classes with a cost above 1 or a charge: kind cost (admitted calls' cost) or charge (units charged from upstream answers).",
      labelNames: ["class", "kind"],
      registers,
    }),
    chargeInvalid: new Counter({
      name: "gateway_ratelimit_charge_invalid_total",
      help: "Upstream answers of a class with a charge whose charge header was missing, malformed or negative (nothing charged).",
      labelNames: ["class"],
      registers,
    }),
    authResults: new HotCounter({
      name: "gateway_auth_results_total",
      help: "Authentication results (valid, missing, malformed, invalid, insufficient_scope, unavailable, limited).",
      labelNames: ["result"],
      registers,
    }),
    introspectionRequests: new Counter({
      name: "gateway_introspection_requests_total",
      help: "Calls to the introspection source by result (active, inactive, error).",
      labelNames: ["result"],
      registers,
    }),
    introspectionDuration: new Histogram({
      name: "gateway_introspection_duration_seconds",
      help: "Duration of calls to the introspection source.",
      buckets: FAST_BUCKETS,
      registers,
    }),
    tokenCacheLookups: new HotCounter({
      name: "gateway_token_cache_lookups_total",
      help: "Token cache lookups (hit, miss, negative, stale).",
      labelNames: ["result"],
      registers,
    }),
    jwksFetches: new Counter({
      name: "gateway_jwks_fetches_total",
      help: "Fetches of the JWT key set, discovery included, by result (success, error).",
      labelNames: ["result"],
      registers,
    }),
    jwtValidations: new HotCounter({
      name: "gateway_jwt_validations_total",
      help: "Local JWT access-token validations by result (valid, malformed, algorithm, bad_signature, expired, claims, unknown_key, unavailable).",
      labelNames: ["result"],
      registers,
    }),
    upstreamErrors: new Counter({
      name: "gateway_upstream_errors_total",
      help: "Upstream failures by upstream and reason (connect, timeout, reset).",
      labelNames: ["upstream", "reason"],
      registers,
    }),
    pool: createUpstreamPoolMetrics(registry, LATENCY_BUCKETS),
    configReloads: new Counter({ ...CONFIG_RELOADS, registers }),
    configInfo: new Gauge({ ...CONFIG_INFO, registers }),
    buildInfo: new Gauge({
      name: "gateway_build_info",
      help: "Build information; always 1.",
      labelNames: ["version", "node_version"],
      registers,
    }),
    inflightNow,
    inflight: new Gauge({
      name: "gateway_inflight_requests",
      help: "Requests in flight on the API listener.",
      registers,
      collect() {
        this.set(inflightNow.value);
      },
    }),
    tracingSpansExported: new Counter({
      name: "gateway_tracing_spans_exported_total",
      help: "Sampled spans the OTLP collector accepted.",
      registers,
    }),
    tracingSpansDropped: new Counter({
      name: "gateway_tracing_spans_dropped_total",
      help: "Sampled spans never delivered, by reason (queue_full, export_failed).",
      labelNames: ["reason"],
      registers,
    }),
  };
  m.buildInfo.set({ version, node_version: process.version }, 1);
  return m;
}

/**
 * The families a cluster primary exports itself (SPEC §15): `gateway_config_reloads_total`, which
 * counts each SIGHUP once for the whole process group (the workers apply, the primary validates
 * and counts), and prom-client's default process metrics of the primary.
 */
export function createPrimaryMetrics(
  registry: Registry,
): Pick<GatewayMetrics, "configReloads" | "configInfo"> {
  collectProcessMetrics(registry);
  return {
    configReloads: new Counter({ ...CONFIG_RELOADS, registers: [registry] }),
    configInfo: new Gauge({ ...CONFIG_INFO, registers: [registry] }),
  };
}
