/**
 * The domain's result words: how an authentication, a limiter decision, a token-cache lookup, a JWT
 * validation or an upstream call ended. Plain string unions that every layer shares; the metrics use
 * them as label values (SPEC §7).
 */

/** `gateway_ratelimit_decisions_total` outcome label. */
export type DecisionOutcome = "allowed" | "limited" | "shadow_limited" | "degraded";
/** `gateway_auth_results_total` result label. */
export type AuthResult =
  | "valid"
  | "missing"
  | "malformed"
  | "invalid"
  | "insufficient_scope"
  | "unavailable"
  | "limited";
/** `gateway_token_cache_lookups_total` result label. */
export type CacheLookup = "hit" | "miss" | "negative" | "stale";
/** `gateway_jwks_fetches_total` result label. */
export type JwksFetchResult = "success" | "error";
/**
 * `gateway_jwt_validations_total` result label (SPEC §11): one per local validation of a JWT access
 * token (RFC 9068), never per cached answer.
 */
export type JwtValidationResult =
  | "valid"
  | "malformed"
  | "algorithm"
  | "bad_signature"
  | "expired"
  | "claims"
  | "unknown_key"
  | "unavailable";
/** `gateway_upstream_errors_total` reason label. */
export type UpstreamErrorReason = "connect" | "timeout" | "reset";
/** `gateway_tracing_spans_dropped_total` reason label (SPEC §13). */
export type SpanDropReason = "queue_full" | "export_failed";

/** `gateway_webhook_deliveries_total{result}` (SPEC §21): delivered, retried, given up, queue full. */
export type WebhookDeliveryResult = "delivered" | "retried" | "failed" | "dropped";
