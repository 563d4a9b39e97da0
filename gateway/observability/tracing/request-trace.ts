/**
 * One request's spans (SPEC §13): the SERVER span, the child spans of the calls it waits on, and
 * the CLIENT span of its upstream request, whose context is injected into the upstream request's
 * headers as a W3C `traceparent` (W3C Trace Context, https://www.w3.org/TR/trace-context/ §3.2).
 * Attribute names follow the OpenTelemetry semantic conventions for HTTP spans
 * (https://opentelemetry.io/docs/specs/semconv/http/http-spans/).
 *
 * Only allocated while tracing is on, and only for a sampled request; one that is not sampled gets
 * an `UnsampledTrace` (its ids, for the access line and the upstream's `traceparent`).
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  defaultTextMapSetter,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapPropagator,
  type Tracer,
} from "@opentelemetry/api";
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
} from "@opentelemetry/semantic-conventions";
import type { HeaderMap } from "../../base/request-facts.js";
import { urlPort } from "../../base/url-port.js";

/**
 * A child span a component asks for around its network calls: an authenticator's
 * (`auth.introspection`, `auth.jwks`) or the limiter's (`ratelimit.redis`).
 */
export interface ChildSpanSpec {
  readonly name: string;
  /** Set on each span at its start (constant: no per-request values, nothing secret). */
  readonly attributes?: Attributes;
}

/**
 * The spec of a child span around calls to one HTTP endpoint: `server.address` and `server.port`
 * of its URL (never its path or query).
 * @example httpCallSpan("auth.introspection", "https://idp.example.com/introspect")
 */
export function httpCallSpan(name: string, url: string): ChildSpanSpec {
  const u = new URL(url);
  return Object.freeze({
    name,
    attributes: Object.freeze({
      [ATTR_SERVER_ADDRESS]: u.hostname.replace(/^\[|\]$/g, ""),
      [ATTR_SERVER_PORT]: urlPort(u),
    }),
  });
}

/** What a request's spans are made with: one per {@link Tracing}, shared by its requests. */
export interface TraceTools {
  readonly tracer: Tracer;
  readonly propagator: TextMapPropagator;
}

/**
 * The spans of one request while tracing is on: {@link RecordedTrace} when sampled, else an
 * `UnsampledTrace` (ids only).
 */
export interface RequestTrace {
  /** The recording SERVER span, or null when the trace is not sampled. */
  readonly server: Span | null;
  /** The trace id (32 lower-case hex digits), sampled or not. */
  readonly traceId: string;
  /** The SERVER span's id (16 lower-case hex digits), sampled or not. */
  readonly spanId: string;
  /**
   * Starts a child span of the SERVER span when the trace is recorded.
   * @returns the span (the caller ends it), or null when not recorded
   */
  child(spec: ChildSpanSpec): Span | null;
  /**
   * Starts the CLIENT span of the upstream request, named `<METHOD>`, and writes its context into
   * the upstream request's headers (`traceparent`, and `tracestate` when the trace has one),
   * replacing the client's: the upstream's parent is this span, sampled or not.
   * @param headers - the prepared upstream request headers, edited in place
   */
  startUpstream(method: string, address: string, port: number, headers: HeaderMap): void;
  /**
   * The upstream's response head arrived: the CLIENT span ends with its status (4xx and 5xx are
   * errors of a CLIENT span, semantic conventions "Status"). Later calls do nothing.
   */
  upstreamResponded(status: number): void;
  /**
   * The upstream request failed before a response head: the CLIENT span ends as an error.
   * @param reason - `connect`, `timeout`, `reset`, or `aborted` (the client went away first)
   */
  upstreamFailed(reason: string): void;
}

/** The spans of one sampled request, recorded with the SDK. */
export class RecordedTrace implements RequestTrace {
  /** The recording SERVER span. */
  readonly server: Span;
  private readonly tools: TraceTools;
  /** The context child spans start in (the SERVER span's), made on first use. */
  private context: Context | null = null;
  /** The CLIENT span of the upstream request while it waits for the response head, else null. */
  private upstream: Span | null = null;

  constructor(tools: TraceTools, server: Span) {
    this.tools = tools;
    this.server = server;
  }

  get traceId(): string {
    return this.server.spanContext().traceId;
  }

  get spanId(): string {
    return this.server.spanContext().spanId;
  }

  child(spec: ChildSpanSpec): Span {
    return this.tools.tracer.startSpan(spec.name, { attributes: spec.attributes }, this.serverContext());
  }

  startUpstream(method: string, address: string, port: number, headers: HeaderMap): void {
    const span = this.tools.tracer.startSpan(
      spanMethod(method),
      { kind: SpanKind.CLIENT },
      this.serverContext(),
    );
    span.setAttribute(ATTR_HTTP_REQUEST_METHOD, httpMethod(method));
    span.setAttribute(ATTR_SERVER_ADDRESS, address);
    span.setAttribute(ATTR_SERVER_PORT, port);
    this.upstream = span;
    // A client tracestate belongs to the client's traceparent: kept (re-written) when that was
    // continued, dropped when this is a new trace (W3C Trace Context §3.3).
    if (headers.tracestate !== undefined) delete headers.tracestate;
    this.tools.propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, defaultTextMapSetter);
  }

  private serverContext(): Context {
    return (this.context ??= trace.setSpan(ROOT_CONTEXT, this.server));
  }

  upstreamResponded(status: number): void {
    const span = this.upstream;
    if (span === null) return;
    this.upstream = null;
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
    if (status >= 400) {
      span.setAttribute(ATTR_ERROR_TYPE, String(status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }

  upstreamFailed(reason: string): void {
    const span = this.upstream;
    if (span === null) return;
    this.upstream = null;
    span.setAttribute(ATTR_ERROR_TYPE, reason);
    span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }
}

/** RFC 9110 §9 methods and PATCH (RFC 5789): the semantic conventions' known methods. */
const KNOWN_METHODS: ReadonlySet<string> = new Set([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "DELETE",
  "CONNECT",
  "OPTIONS",
  "TRACE",
  "PATCH",
]);

/** `http.request.method`: a known method as is, anything else `_OTHER` (bounded cardinality). */
export function httpMethod(method: string): string {
  return KNOWN_METHODS.has(method) ? method : "_OTHER";
}

/** The span name's method part: a known method, else `HTTP` (semantic conventions, "Name"). */
export function spanMethod(method: string): string {
  return KNOWN_METHODS.has(method) ? method : "HTTP";
}

/**
 * A child span of `trace` per `spec`, or null when tracing is off, the component asked for none,
 * or the trace is not recorded.
 */
export function childSpan(trace: RequestTrace | null, spec: ChildSpanSpec | undefined): Span | null {
  return trace === null || spec === undefined ? null : trace.child(spec);
}

/**
 * Ends `span` when `call` settles: an error on rejection (`error.type` the error's name). With no
 * span, `call` itself, so tracing off costs nothing. Start the span before making the call.
 * @example return traced(childSpan(trace, REDIS_SPAN), this.run(key, policy, true));
 */
export function traced<T>(span: Span | null, call: Promise<T>): Promise<T> {
  if (span === null) return call;
  return call.then(
    (value) => {
      span.end();
      return value;
    },
    (err: unknown) => {
      endWithError(span, err);
      throw err;
    },
  );
}

/**
 * Ends `span` as an error (`error.type` the error's name), as {@link traced} does on a rejection:
 * for a call that reports its failure rather than rejecting.
 */
export function endWithError(span: Span, err: unknown): void {
  span.setAttribute(ATTR_ERROR_TYPE, err instanceof Error ? err.name : "Error");
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
