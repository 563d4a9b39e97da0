/**
 * The trace of a request that is not sampled (SPEC §13): a parent-based sampler left it out, either
 * because the client's `traceparent` says so (flag 00) or because `sample_ratio` did not pick its
 * new trace id. Nothing is recorded or exported, but its ids still exist: the access line shows them
 * and the upstream gets a `traceparent` whose parent is the gateway's (unrecorded) CLIENT span.
 *
 * This is the path of almost every request under a low `sample_ratio`, so it is built without the
 * SDK's span machinery (a non-recording span, its context object and a propagation context per
 * request): three id strings and the one header. The header is the W3C Trace Context `traceparent`
 * (https://www.w3.org/TR/trace-context/ §3.2: `00-<trace-id>-<parent-id>-<flags>`, flags 00), the
 * same bytes the SDK's `W3CTraceContextPropagator` writes for a non-recording span (a unit test
 * holds the two together).
 */
import type { Span } from "@opentelemetry/api";
import type { IdGenerator } from "@opentelemetry/sdk-trace-base";
import type { HeaderMap } from "../../base/request-facts.js";
import type { RequestTrace } from "./request-trace.js";

/** A request's trace that records nothing. */
export class UnsampledTrace implements RequestTrace {
  readonly server: Span | null = null;
  readonly traceId: string;
  readonly spanId: string;
  /** The client's `tracestate` when its `traceparent` was continued, else undefined. */
  private readonly traceState: string | undefined;
  private readonly ids: IdGenerator;

  /**
   * @param traceId - 32 lower-case hex digits (the client's, or new)
   * @param traceState - the client's `tracestate` field as received, when its trace is continued
   */
  constructor(ids: IdGenerator, traceId: string, traceState: string | undefined) {
    this.ids = ids;
    this.traceId = traceId;
    this.spanId = ids.generateSpanId();
    this.traceState = traceState;
  }

  /** Never a child span: nothing is recorded. */
  child(): null {
    return null;
  }

  /**
   * Writes `traceparent` (not sampled, a new CLIENT span id under this trace) and keeps the
   * client's `tracestate` only when its trace was continued (W3C Trace Context §3.3).
   */
  startUpstream(_method: string, _address: string, _port: number, headers: HeaderMap): void {
    headers.traceparent = `00-${this.traceId}-${this.ids.generateSpanId()}-00`;
    if (this.traceState === undefined) {
      if (headers.tracestate !== undefined) delete headers.tracestate;
    } else headers.tracestate = this.traceState;
  }

  upstreamResponded(): void {}

  upstreamFailed(): void {}
}
