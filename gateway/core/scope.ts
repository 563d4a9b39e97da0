/**
 * Per-request state carried between pipeline steps (oauth2-proxy's `RequestScope`). One object per
 * request, created with every field so V8 keeps one hidden class. Transport-neutral: the transport
 * that received the request keeps its own objects and finds the scope on them under {@link SCOPE}.
 */
import type { ErrorCode } from "../base/error-catalog.js";
import type { ClientProtocol } from "../base/request-facts.js";
import type { FinishObserver, FinishedRequest } from "../observability/finished-request.js";
import type { RequestTrace } from "../observability/tracing/request-trace.js";
import type { RateLimitHeaders } from "../ratelimit/headers.js";
import type { BudgetKeys, Decision } from "../ratelimit/limiter.js";
import type { ResolvedPolicy } from "../ratelimit/policy.js";
import type { Route } from "../routing/routes.js";
import type { UpstreamCall } from "../proxy/upstream-call.js";
import type { Runtime } from "./runtime.js";

/** The scope's slot on a transport's request and response objects (hoisted handlers, no closures). */
export const SCOPE: unique symbol = Symbol("gateway.scope");

/**
 * Everything the pipeline learns about one request, written by the core (and the exchange through
 * the core's hooks); once finished, the observers read it as a {@link FinishedRequest}.
 */
export class RequestScope implements FinishedRequest {
  /** `X-Request-Id`, taken from the request when well-formed, else generated. */
  requestId: string;
  /** The clock's monotonic reading at accept (ms). */
  readonly startMs: number;
  /** The configuration this request runs on from start to finish (a reload never mixes two). */
  readonly runtime: Runtime;
  /** Observers of this request's end (shared by every request of one transport). */
  readonly observers: readonly FinishObserver[];
  method: string;
  protocol: ClientProtocol;
  /**
   * `"decision"` when the request is a question about another one (SPEC §23: answered, never
   * proxied), else `"proxy"`.
   */
  mode: "proxy" | "decision" = "proxy";
  /** Normalised path (no query), the only path that is logged. */
  path = "";
  clientIp = "";
  route: Route | null = null;
  /** Limit class charged (`anonymous` for unauthenticated calls). */
  className = "";
  policy: ResolvedPolicy | null = null;
  /** The identity's value as logged (`sub`, `client_id`, ...), or "". */
  identity = "";
  /** The identity with its kind, as the stores key it (`sub:alice`), or "". */
  identityKey = "";
  /** SHA-256 hex of the bearer token (the cache key), or "". */
  tokenHash = "";
  /** The shared budgets the call belongs to (SPEC §22), or null (none configured, anonymous). */
  budgets: BudgetKeys | null = null;
  decision: Decision | null = null;
  headers: RateLimitHeaders | null = null;
  /**
   * `Access-Control-Allow-Origin` for this request's `Origin` when `cors` allows it (the origin, or
   * `*`), else null.
   */
  corsAllowed: string | null = null;
  /** For a refused decision: `"identity"` or the budget's key that refused it (SPEC §22); else null. */
  limitedBy: string | null = null;
  /** For a refused decision: the refusing window's name (`"month"`, `"60s"`; SPEC §19); else null. */
  limitingWindow: string | null = null;
  /** Catalog code when the gateway answered itself. */
  errorCode: ErrorCode | null = null;
  /** The clock's monotonic reading when the upstream request was sent (ms), or -1. */
  upstreamStartMs = -1;
  /** The event loop's stall total (gateway/base/loop-stall.ts) then (ms), for an admitted call. */
  upstreamStartStallMs = 0;
  /** Upstream time to response headers (ms), or -1. */
  upstreamMs = -1;
  /**
   * The upstream endpoint of the latest try (SPEC §16): its `host:port` and that name as JSON (for
   * the access line, made once per endpoint), or null.
   */
  endpoint: { readonly name: string; readonly json: string } | null = null;
  /**
   * The upstream call its upstream admitted (SPEC §17, §18), ended when the request finishes and
   * fed its upstream latency; or null (never admitted: refused earlier, or a decision).
   */
  call: UpstreamCall | null = null;
  /** SPEC §18: `"shadow"` for a call shadow mode would have shed (the access line's `shed`), else null. */
  shed: "shadow" | null = null;
  /** Upstream tries made (SPEC §17: 1 without retries), or 0 when never proxied. */
  attempts = 0;
  /** The request's spans while tracing is on (SPEC §13), else null: nothing is allocated. */
  trace: RequestTrace | null = null;
  /** The status sent, set by {@link finish} (0 before). */
  status = 0;
  /** Accept to finish (ms), set by {@link finish} (-1 before). */
  durationMs = -1;
  /** The observers were told. */
  finished = false;

  constructor(
    requestId: string,
    method: string,
    protocol: ClientProtocol,
    startMs: number,
    runtime: Runtime,
    observers: readonly FinishObserver[],
  ) {
    this.requestId = requestId;
    this.method = method;
    this.protocol = protocol;
    this.startMs = startMs;
    this.runtime = runtime;
    this.observers = observers;
    runtime.generation.enter();
  }

  /**
   * The one end of a request: records its status and duration, ends its upstream call, leaves its
   * configuration's generation (the last call of a replaced configuration releases it) and tells
   * every observer once; later calls do nothing.
   * @param status - the status sent (499 when the client went away first)
   */
  finish(status: number): void {
    if (this.finished) return;
    this.finished = true;
    this.status = status;
    this.durationMs = this.runtime.clock.monotonicMs() - this.startMs;
    if (this.call !== null) this.call.end();
    try {
      for (const o of this.observers) o.onFinish(this);
    } finally {
      // Whatever an observer does, the request leaves its configuration, so a replaced one is
      // still released when its last request ends.
      this.runtime.generation.leave();
    }
  }
}
