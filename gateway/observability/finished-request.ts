/**
 * What the finish observers read of one request (Fastify's `onResponse` hooks): the access line,
 * the request metrics and the SERVER span are built from it and from nothing else. The core fills
 * it while the request runs and hands it over once, finished; observers only read it. The fields
 * are base types and narrow views of the steps' data, so observability depends on no step.
 */
import type { ErrorCode } from "../base/error-catalog.js";
import type { ClientProtocol } from "../base/request-facts.js";
import type { RequestTrace } from "./tracing/request-trace.js";

/** A finished request, read-only (SPEC §7 metrics, §12 access line, §13 spans). */
export interface FinishedRequest {
  /** `X-Request-Id` as sent back. */
  readonly requestId: string;
  readonly method: string;
  readonly protocol: ClientProtocol;
  /** `"decision"` for a decision request (SPEC §23), else `"proxy"`. */
  readonly mode: "proxy" | "decision";
  /** Normalised path (no query), the only path that is logged; "" before it was parsed. */
  readonly path: string;
  readonly clientIp: string;
  /** Accept time (ms, the clock's monotonic reading). */
  readonly startMs: number;
  /** The status sent: 499 when the client went away first, 101 for an upgrade. */
  readonly status: number;
  /** Accept to finish (ms). */
  readonly durationMs: number;
  /** The matched route's prefix, or null. */
  readonly route: { readonly prefix: string } | null;
  /** Limit class charged (`anonymous` for unauthenticated calls), or "". */
  readonly className: string;
  /** The class's plan and mode, or null when no class was resolved. */
  readonly policy: { readonly plan: string | null; readonly mode: "enforce" | "shadow" } | null;
  /** The identity's value as logged (`sub`, `client_id`, ...), or "". */
  readonly identity: string;
  /** The limiter's answer, or null when the call was not counted. */
  readonly decision: {
    readonly allowed: boolean;
    readonly remaining: number;
    readonly degraded: boolean;
  } | null;
  /**
   * For a refused decision, the level whose window refused it (SPEC §22): `"identity"` or a
   * budget's key (`"claim:org_id"`); else null.
   */
  readonly limitedBy: string | null;
  /** For a refused decision: the refusing window's name (`"month"`, `"60s"`); else null. */
  readonly limitingWindow: string | null;
  /** Catalogue code when the gateway answered itself, else null. */
  readonly errorCode: ErrorCode | null;
  /** Upstream time to response head (ms), or -1. */
  readonly upstreamMs: number;
  /** The latest try's endpoint, its name as JSON (made once per endpoint), or null. */
  readonly endpoint: { readonly json: string } | null;
  /** Upstream tries made, 0 when never proxied. */
  readonly attempts: number;
  /** `"shadow"` for a call shadow mode would have shed, else null. */
  readonly shed: "shadow" | null;
  /** The request's spans while tracing is on, else null. */
  readonly trace: RequestTrace | null;
}

/** Subscribes to the end of every request; told once per request, after the response. */
export interface FinishObserver {
  onFinish(request: FinishedRequest): void;
}
