/**
 * What the request core decided, as plain data; the transport writer turns it into bytes.
 */
import { ERROR_CATALOG, type ErrorCode } from "../base/error-catalog.js";
import type { HeaderMap } from "../base/request-facts.js";
import type { Upstream } from "../proxy/upstream.js";

/** The core's decision for one request. */
export type Outcome =
  /** Answer a catalogue error (SPEC §2); see `errorResponse`. */
  | { readonly kind: "error"; readonly code: ErrorCode }
  /** Answer a CORS preflight (SPEC §14): 204, never forwarded, authenticated or counted. */
  | { readonly kind: "preflight" }
  /** Answer `GET /rate_limit` with this JSON body. */
  | { readonly kind: "status"; readonly body: string }
  /** Forward to one of `upstream`'s endpoints (see {@link ProxyOutcome}). */
  | ProxyOutcome;

/** Forward to `upstream`: `path` (with query) and `headers` are what it receives. */
export interface ProxyOutcome {
  readonly kind: "proxy";
  readonly upstream: Upstream;
  readonly path: string;
  readonly headers: HeaderMap;
  /** The balancer's key with `consistent_hash` (SPEC §16), else undefined. */
  readonly hashKey: string | undefined;
}

const errors = new Map<ErrorCode, Outcome>();
for (const code of Object.keys(ERROR_CATALOG) as ErrorCode[])
  errors.set(code, Object.freeze({ kind: "error", code }));

/** The error outcome of a code: one frozen object per code, no allocation per request. */
export function errorOutcome(code: ErrorCode): Outcome {
  return errors.get(code)!;
}

/** The preflight outcome (one frozen object). */
export const PREFLIGHT: Outcome = Object.freeze({ kind: "preflight" });
