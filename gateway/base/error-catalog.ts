/**
 * The error catalog (SPEC §2): every response the gateway itself produces, by stable code.
 * `test/repository/readme-documents-everything.test.ts` fails when the README does not document one.
 */

/** A catalog entry. */
export interface CatalogEntry {
  status: number;
  message: string;
  /** Text of the README's "Condition" column. */
  condition: string;
  /** The connection closes after this answer (the request's framing cannot be trusted). */
  closesConnection?: true;
  /** `Retry-After` (s) the answer carries (a 429's comes from the limiter instead). */
  retryAfterS?: number;
}

/** `Retry-After` (s) on a 503 of an unavailable dependency (identity provider, limit store). */
export const UNAVAILABLE_RETRY_AFTER_S = 5;

/** Stable gateway error codes. */
export type ErrorCode =
  | "auth_required"
  | "auth_malformed"
  | "auth_invalid"
  | "auth_insufficient_scope"
  | "rate_limited"
  | "not_found"
  | "bad_request"
  | "bad_host"
  | "bad_framing"
  | "header_too_large"
  | "request_timeout"
  | "auth_unavailable"
  | "ratelimit_unavailable"
  | "bad_gateway"
  | "gateway_timeout"
  | "payload_too_large"
  | "upstream_overloaded";

/** Code → status, message. Messages never contain tokens, secrets or upstream addresses. */
export const ERROR_CATALOG: Readonly<Record<ErrorCode, CatalogEntry>> = Object.freeze({
  auth_required: { status: 401, message: "Authentication required", condition: "No `Authorization` header" },
  auth_malformed: {
    status: 400,
    message: "Malformed Authorization header",
    condition: "Header present but not `Bearer <token68>`",
  },
  auth_invalid: {
    status: 401,
    message: "Invalid or expired access token",
    condition: "Token unknown, inactive or expired",
  },
  auth_insufficient_scope: {
    status: 403,
    message: "Insufficient scope",
    condition: "Route requires a scope the token lacks",
  },
  rate_limited: {
    status: 429,
    message: "API rate limit exceeded. Please try again in N seconds",
    condition: "Over the limit of the class",
  },
  not_found: { status: 404, message: "Not found", condition: "No route matches the path" },
  bad_request: {
    status: 400,
    message: "Bad request",
    condition: "Request target not origin-form, malformed percent-encoding or invalid UTF-8",
  },
  bad_host: {
    status: 400,
    message: "Bad request",
    condition:
      "An HTTP/1.1 request with no `Host` field or more than one (RFC 9112 §3.2); the connection closes",
    closesConnection: true,
  },
  bad_framing: {
    status: 400,
    message: "Bad request",
    condition:
      "The HTTP parser refused the request (invalid framing, conflicting lengths, bad characters); the connection closes",
    closesConnection: true,
  },
  header_too_large: {
    status: 431,
    message: "Request header fields too large",
    condition: "Request head larger than `listen.max_header_bytes`; the connection closes",
    closesConnection: true,
  },
  request_timeout: {
    status: 408,
    message: "Request timeout",
    condition: "Request head not received within `listen.headers_timeout_ms`; the connection closes",
    closesConnection: true,
  },
  auth_unavailable: {
    status: 503,
    message: "Authentication service unavailable",
    retryAfterS: UNAVAILABLE_RETRY_AFTER_S,
    condition:
      "Introspection source unreachable and nothing usable cached, or a JWT signed by a key not held while the key set cannot be fetched",
  },
  ratelimit_unavailable: {
    status: 503,
    message: "Rate limit service unavailable",
    retryAfterS: UNAVAILABLE_RETRY_AFTER_S,
    condition: "Limit store unreachable and `failure_mode: closed`",
  },
  bad_gateway: { status: 502, message: "Bad gateway", condition: "Upstream refused, reset or unreachable" },
  gateway_timeout: {
    status: 504,
    message: "Gateway timeout",
    condition: "Upstream did not answer within its timeout",
  },
  payload_too_large: {
    status: 413,
    message: "Request body too large",
    condition:
      "`Content-Length` above the route's `max_body_bytes` (or `listen.max_body_bytes`), or a body without one that grows past it; the connection closes",
    closesConnection: true,
  },
  upstream_overloaded: {
    status: 503,
    message: "Service overloaded, please retry",
    // SPEC §17: capacity frees as calls finish.
    retryAfterS: 1,
    condition: "The upstream's `max_in_flight` calls are in flight (circuit breaking); `Retry-After: 1`",
  },
});

const bodies = new Map<ErrorCode, string>();
for (const [code, e] of Object.entries(ERROR_CATALOG) as [ErrorCode, CatalogEntry][]) {
  bodies.set(code, JSON.stringify({ error: { code: e.status, message: e.message } }));
}

/**
 * The JSON body of an error response, precomputed except for the 429 (whose message carries N).
 * @param retryAfterS - whole seconds, for `rate_limited` only
 */
export function errorBody(code: ErrorCode, retryAfterS = 1): string {
  if (code === "rate_limited") {
    return `{"error":{"code":429,"message":"API rate limit exceeded. Please try again in ${retryAfterS} seconds"}}`;
  }
  return bodies.get(code)!;
}
