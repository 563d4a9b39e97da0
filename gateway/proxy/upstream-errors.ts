/**
 * Why an upstream exchange failed, for both engines: the `reason` label of
 * `gateway_upstream_errors_total` and the choice between 502 and 504 (SPEC §2).
 */
import type { UpstreamErrorReason } from "../base/results.js";

/** Error code the http-proxy engine gives its own response timeout. */
export const RESPONSE_TIMEOUT_CODE = "EUPSTREAMTIMEOUT";
/** Error code the http-proxy engine gives its own connect timeout. */
export const CONNECT_TIMEOUT_CODE = "EUPSTREAMCONNECTTIMEOUT";

const TIMEOUT_CODES = new Set([RESPONSE_TIMEOUT_CODE, "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);
const CONNECT_CODES = new Set([
  CONNECT_TIMEOUT_CODE,
  "UND_ERR_CONNECT_TIMEOUT",
  "ECONNREFUSED",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
]);

/**
 * @param err - what the engine reported (Node errno or undici's stable `UND_ERR_*` code)
 * @returns `timeout` (504), `connect` or `reset` (502)
 */
export function upstreamErrorReason(err: Error): UpstreamErrorReason {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === undefined) return "reset";
  if (TIMEOUT_CODES.has(code)) return "timeout";
  if (CONNECT_CODES.has(code)) return "connect";
  return "reset";
}
