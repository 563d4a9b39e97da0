/**
 * The responses the gateway produces itself and the fields it adds to every response (SPEC §2,
 * §3), as plain data: a status, header fields and a body. Transport writers put them on the wire;
 * nothing here knows `node:http`.
 */
import {
  ERROR_CATALOG,
  errorBody,
  UNAVAILABLE_RETRY_AFTER_S,
  type ErrorCode,
} from "../base/error-catalog.js";
import type { HeaderMap } from "../base/request-facts.js";
import { ietfPolicyValue } from "../ratelimit/policy.js";
import type { RequestScope } from "./scope.js";

const JSON_TYPE = "application/json; charset=utf-8";

/** A response of the gateway's own. */
export interface GatewayResponse {
  status: number;
  /** Every field, the rate-limit ones included; no connection-specific field. */
  headers: Record<string, string>;
  body: string;
  /** The transport closes the connection after it (HTTP/1.1 `Connection: close`). */
  closesConnection: boolean;
}

/**
 * Sets `X-Request-Id` and the rate-limit fields on `headers`, in place, overwriting any the upstream
 * sent (SPEC §3). Without a decision (store down, `failure_mode: closed`) the class is reported as
 * exhausted for 1 s.
 * With a `cors` block, the CORS fields too (SPEC §14).
 * @param nowMs - the current time (epoch ms), used only without a decision
 * @param fromUpstream - `headers` are the upstream's (its `Access-Control-*` fields are dropped)
 */
export function addGatewayFields(
  headers: HeaderMap,
  scope: RequestScope,
  nowMs: number,
  fromUpstream = false,
): void {
  headers["x-request-id"] = scope.requestId;
  const cors = scope.runtime.cors;
  if (cors !== null) cors.decorate(headers, scope.corsAllowed, fromUpstream);
  const h = scope.headers;
  if (h === null) {
    // No decision: the class is reported spent until the 503's Retry-After, so Reset − now
    // rounds up to Retry-After as the Reset rule wants.
    const p = scope.policy ?? scope.runtime.policies.anonymous;
    headers["x-ratelimit-limit"] = String(p.windows[0]!.limit);
    headers["x-ratelimit-remaining"] = "0";
    headers["x-ratelimit-reset"] = String(Math.floor(nowMs / 1000) + UNAVAILABLE_RETRY_AFTER_S);
    headers["x-ratelimit-resource"] = p.className;
    if (p.ietfPolicy !== null) {
      headers["ratelimit-policy"] = ietfPolicyValue(p, nowMs)!;
      headers["ratelimit"] = `"${p.ietfItems[0]!}";r=0;t=${UNAVAILABLE_RETRY_AFTER_S}`;
    }
    return;
  }
  headers["x-ratelimit-limit"] = h.limit;
  headers["x-ratelimit-remaining"] = h.remaining;
  headers["x-ratelimit-reset"] = h.reset;
  headers["x-ratelimit-resource"] = h.resource;
  if (h.ietf !== undefined) {
    headers["ratelimit-policy"] = h.ietfPolicy;
    headers["ratelimit"] = h.ietf;
  }
}

/**
 * A catalogue error (SPEC §2) with its challenge, `Retry-After` and rate-limit fields; records the
 * code on the scope for the access line.
 * @param nowMs - the current time (epoch ms)
 */
export function errorResponse(scope: RequestScope, code: ErrorCode, nowMs: number): GatewayResponse {
  scope.errorCode = code;
  const entry = ERROR_CATALOG[code];
  const headers: Record<string, string> = {};
  let body: string;
  if (code === "rate_limited") {
    const n = scope.headers?.retryAfterS ?? 1;
    headers["retry-after"] = String(n);
    body = errorBody(code, n);
  } else {
    body = errorBody(code);
    if (entry.retryAfterS !== undefined) headers["retry-after"] = String(entry.retryAfterS);
  }
  const challenge = challengeFor(code, scope.runtime.request.realm, scope.route?.scopes);
  if (challenge !== null) headers["www-authenticate"] = challenge;
  headers["content-type"] = JSON_TYPE;
  headers["content-length"] = String(Buffer.byteLength(body));
  addGatewayFields(headers, scope, nowMs);
  return { status: entry.status, headers, body, closesConnection: entry.closesConnection === true };
}

/** A 200 JSON answer of the gateway's own (`GET /rate_limit`). */
export function jsonResponse(scope: RequestScope, body: string, nowMs: number): GatewayResponse {
  const headers: Record<string, string> = {
    "content-type": JSON_TYPE,
    "content-length": String(Buffer.byteLength(body)),
  };
  addGatewayFields(headers, scope, nowMs);
  return { status: 200, headers, body, closesConnection: false };
}

/**
 * The answer to a CORS preflight (SPEC §14): 204 with the IP's anonymous rate-limit fields, `Vary:
 * Origin`, and for an allowed origin the allow fields.
 */
export function preflightResponse(scope: RequestScope, nowMs: number): GatewayResponse {
  const headers: Record<string, string> = {};
  addGatewayFields(headers, scope, nowMs);
  if (scope.corsAllowed !== null) scope.runtime.cors?.preflight(headers);
  return { status: 204, headers, body: "", closesConnection: false };
}

/** RFC 6750 §3 challenges. */
function challengeFor(code: ErrorCode, realm: string, scopes: readonly string[] | undefined): string | null {
  switch (code) {
    case "auth_required":
      return `Bearer realm="${realm}"`;
    case "auth_malformed":
      return `Bearer realm="${realm}", error="invalid_request"`;
    case "auth_invalid":
      return `Bearer realm="${realm}", error="invalid_token"`;
    case "auth_insufficient_scope":
      return `Bearer realm="${realm}", error="insufficient_scope", scope="${(scopes ?? []).join(" ")}"`;
    default:
      return null;
  }
}
