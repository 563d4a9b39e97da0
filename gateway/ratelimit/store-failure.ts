/**
 * What made a Redis call fail, named for people (issue: every wrong setting used to read as
 * ioredis's generic "Stream isn't writeable and enableOfflineQueue options is false"). The reason
 * is the `reason` label of `gateway_ratelimit_store_errors_total` and a field of the outage log
 * line; the detail is the underlying message (Node's system error, Redis's error reply), which
 * names the code (`ECONNREFUSED`, `ENOTFOUND`, `WRONGPASS`, a TLS error) and never a password.
 */
import { ReplyTimeoutError } from "./reply-watch.js";

/**
 * Why a limit-store call failed:
 * - `timeout`: no reply `command_timeout_ms` after the write, or no connection that long;
 * - `refused`: the port refused the connection (`ECONNREFUSED`);
 * - `dns`: the host name did not resolve (`ENOTFOUND`, `EAI_AGAIN`);
 * - `tls`: the TLS handshake failed (`rediss://` against plain Redis, a certificate refused);
 * - `auth`: Redis refused the credentials (`WRONGPASS`, `NOAUTH`);
 * - `database`: `SELECT` refused the URL's database index;
 * - `connection`: the connection closed or reset;
 * - `reply`: Redis answered the call with an error (`OOM`, a script error).
 */
export type StoreFailureReason =
  | "timeout"
  | "refused"
  | "dns"
  | "tls"
  | "auth"
  | "database"
  | "connection"
  | "reply";

/** A classified failure. */
export interface StoreFailure {
  reason: StoreFailureReason;
  /** The underlying message, e.g. `connect ECONNREFUSED 127.0.0.1:6390`. */
  detail: string;
}

const DNS_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_FAIL", "EAI_NONAME"]);
const TLS_CODES = /^(ERR_SSL_|ERR_TLS_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|EPROTO$)/;
const CONNECTION_CODES = new Set(["ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH"]);

/**
 * Classifies an error of ioredis or of the socket under it.
 * @param err - an `error` event's error, or a failed call's rejection
 */
export function describeRedisError(err: unknown): StoreFailure {
  if (err instanceof ReplyTimeoutError) return { reason: "timeout", detail: err.message };
  const e = err instanceof Error ? (err as Error & { code?: unknown; command?: { name?: unknown } }) : null;
  const message = e?.message ?? String(err);
  const code = typeof e?.code === "string" ? e.code : "";
  if (e?.command?.name === "select") {
    return { reason: "database", detail: `SELECT refused the URL's database index: ${message}` };
  }
  if (code === "ECONNREFUSED") return { reason: "refused", detail: message };
  if (DNS_CODES.has(code)) return { reason: "dns", detail: message };
  if (TLS_CODES.test(code) || /\b(TLS|SSL)\b|certificate/i.test(message))
    return { reason: "tls", detail: message };
  if (/\b(WRONGPASS|NOAUTH)\b/.test(message)) return { reason: "auth", detail: message };
  if (
    CONNECTION_CODES.has(code) ||
    /Connection is closed|Stream isn't writeable|max retries per request/i.test(message)
  ) {
    return { reason: "connection", detail: message };
  }
  return { reason: "reply", detail: message };
}
