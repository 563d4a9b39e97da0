/**
 * Per-request state carried between pipeline steps (oauth2-proxy's `RequestScope`). One object per
 * request, created with every field so V8 keeps one hidden class.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ErrorCode } from "./errors.js";
import type { Decision, LimitPolicy } from "./ratelimit/limiter.js";
import type { RateLimitHeaders } from "./ratelimit/headers.js";
import type { Route } from "./routing/routes.js";

/** The scope's slot on `req` and `res`, so hoisted event handlers find it without closures. */
export const SCOPE: unique symbol = Symbol("gateway.scope");

/** A request (or response) carrying its scope. */
export type ScopedRequest = IncomingMessage & { [SCOPE]?: RequestScope };
export type ScopedResponse = ServerResponse & { [SCOPE]?: RequestScope };

/** Everything the pipeline learns about one request. */
export class RequestScope {
  /** `X-Request-Id`, taken from the request when well-formed, else generated. */
  requestId: string;
  /** `performance.now()` at accept (ms). */
  readonly startMs: number;
  method: string;
  /** Normalised path (no query), the only path that is logged. */
  path = "";
  clientIp = "";
  route: Route | null = null;
  /** Limit class charged (`anonymous` for unauthenticated calls). */
  className = "";
  policy: LimitPolicy | null = null;
  identity = "";
  /** SHA-256 hex of the bearer token (the cache key), or "". */
  tokenHash = "";
  decision: Decision | null = null;
  headers: RateLimitHeaders | null = null;
  /** Catalog code when the gateway answered itself. */
  errorCode: ErrorCode | null = null;
  /** `performance.now()` when the upstream request was sent (ms), or -1. */
  upstreamStartMs = -1;
  /** Upstream time to response headers (ms), or -1. */
  upstreamMs = -1;
  /** The access line and metrics were written. */
  finished = false;
  /** Writes the access line and metrics; set by the pipeline (hoisted `close` handlers call it). */
  finisher: ((scope: RequestScope, status: number) => void) | null = null;

  constructor(requestId: string, method: string, startMs: number) {
    this.requestId = requestId;
    this.method = method;
    this.startMs = startMs;
  }
}
