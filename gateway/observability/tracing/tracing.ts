/**
 * Distributed tracing of one gateway (SPEC §13) on the OpenTelemetry JS SDK 2.x: its own
 * `BasicTracerProvider` (never registered globally, so many gateways live in one process), parent-based
 * sampling with `TraceIdRatioBased(sample_ratio)` for new traces, the W3C Trace Context propagator
 * (https://www.w3.org/TR/trace-context/) and a bounded `BatchSpanProcessor` in front of the OTLP/HTTP
 * protobuf exporter. Built only when tracing is configured; the runtime keeps it across reloads
 * while its settings do not change.
 *
 * Never in the way of a request: spans are queued (at most `maxQueueSize`, more are dropped and
 * counted) and exported in the background; a slow or dead collector costs export attempts, never a
 * request's time.
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  TraceFlags,
  defaultTextMapGetter,
  isSpanContextValid,
  trace,
  type Tracer,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from "@opentelemetry/resources";
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  RandomIdGenerator,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type BufferConfig,
  type IdGenerator,
} from "@opentelemetry/sdk-trace-base";
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION,
  ATTR_URL_SCHEME,
} from "@opentelemetry/semantic-conventions";
import type { MeterProvider } from "@opentelemetry/api";
import type { HeaderMap } from "../../base/request-facts.js";
import {
  httpMethod,
  RecordedTrace,
  spanMethod,
  type RequestTrace,
  type TraceTools,
} from "./request-trace.js";
import type { TracingSettings } from "./settings.js";
import { CountingExporter, queueDropMeterProvider, type SpanOutcomes } from "./span-accounting.js";
import { UnsampledTrace } from "./unsampled-trace.js";

/**
 * The SDK's random ids, except that the next trace id can be set: the gateway draws a new trace's
 * id and its sampling decision first, and only a sampled one reaches the SDK, which must then start
 * its span with that same id (so the SDK's own ratio sampler decides the same).
 */
class PresetIdGenerator implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  /** The trace id the next {@link generateTraceId} returns, once. */
  preset: string | null = null;

  generateTraceId(): string {
    const id = this.preset;
    if (id === null) return this.random.generateTraceId();
    this.preset = null;
    return id;
  }

  generateSpanId(): string {
    return this.random.generateSpanId();
  }
}

/** Longest time {@link Tracing.shutdown} waits for the last exports (ms). */
const SHUTDOWN_TIMEOUT_MS = 5000;

/** The tracer of one gateway configuration. */
export class Tracing {
  readonly settings: TracingSettings;
  private readonly provider: BasicTracerProvider;
  private readonly exporter: CountingExporter;
  private readonly tracer: Tracer;
  private readonly propagator = new W3CTraceContextPropagator();
  private readonly tools: TraceTools;
  private readonly ids = new PresetIdGenerator();
  /** `sample_ratio` applied to new trace ids, the provider sampler's root (same decisions). */
  private readonly ratio: TraceIdRatioBasedSampler;

  /**
   * @param outcomes - told of every sampled span's fate (the `gateway_tracing_spans_*` counters)
   * @param version - the gateway's version (`service.version`)
   */
  constructor(settings: TracingSettings, outcomes: SpanOutcomes, version: string) {
    this.settings = settings;
    this.ratio = new TraceIdRatioBasedSampler(settings.sampleRatio);
    const exporter = new CountingExporter(new OTLPTraceExporter({ url: settings.endpoint }), outcomes);
    this.exporter = exporter;
    // `selfObsMeterProvider` is an option of the SDK's batch processor that its env-reading
    // subclass passes through but does not declare.
    const batch: BufferConfig & { selfObsMeterProvider: MeterProvider } = {
      maxQueueSize: settings.maxQueueSize,
      maxExportBatchSize: settings.maxExportBatchSize,
      scheduledDelayMillis: settings.scheduledDelayMs,
      exportTimeoutMillis: settings.exportTimeoutMs,
      selfObsMeterProvider: queueDropMeterProvider(outcomes),
    };
    this.provider = new BasicTracerProvider({
      resource: defaultResource()
        .merge(detectResources({ detectors: [envDetector] }))
        .merge(
          resourceFromAttributes({
            [ATTR_SERVICE_NAME]: settings.serviceName,
            [ATTR_SERVICE_VERSION]: version,
          }),
        ),
      sampler: new ParentBasedSampler({ root: this.ratio }),
      spanProcessors: [new BatchSpanProcessor(exporter, batch)],
      idGenerator: this.ids,
    });
    this.tracer = this.provider.getTracer("gateway", version);
    this.tools = { tracer: this.tracer, propagator: this.propagator };
  }

  /**
   * Starts a request's trace: its SERVER span, named `<METHOD>` until the route is known,
   * continuing the client's trace when its `traceparent` is valid (W3C Trace Context §3.2;
   * `tracestate` §3.3). Parent-based sampling is decided here first: a trace that is not sampled
   * (the client's flag 00, or a new trace id `sample_ratio` leaves out) never reaches the SDK.
   * @param headers - the request's header fields, or null (a request the parser refused)
   * @param startMs - the clock's monotonic reading at accept (ms; the system clock's is
   *   `performance.now()`, which the SDK takes as span time)
   * @param secure - the client connection is TLS (`url.scheme`)
   */
  begin(headers: HeaderMap | null, method: string, startMs: number, secure: boolean): RequestTrace {
    let parent = ROOT_CONTEXT;
    if (headers !== null && headers.traceparent !== undefined) {
      parent = this.propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
      const remote = trace.getSpanContext(parent);
      if (remote !== undefined && isSpanContextValid(remote)) {
        if ((remote.traceFlags & TraceFlags.SAMPLED) === 0) {
          const state = headers.tracestate;
          return new UnsampledTrace(this.ids, remote.traceId, typeof state === "string" ? state : undefined);
        }
      } else parent = ROOT_CONTEXT;
    }
    if (parent === ROOT_CONTEXT) {
      const traceId = this.ids.generateTraceId();
      const sampled = this.ratio.shouldSample(ROOT_CONTEXT, traceId).decision;
      if (sampled !== SamplingDecision.RECORD_AND_SAMPLED)
        return new UnsampledTrace(this.ids, traceId, undefined);
      this.ids.preset = traceId;
    }
    const span = this.tracer.startSpan(
      spanMethod(method),
      { kind: SpanKind.SERVER, startTime: startMs },
      parent,
    );
    this.ids.preset = null;
    span.setAttribute(ATTR_HTTP_REQUEST_METHOD, httpMethod(method));
    span.setAttribute(ATTR_URL_SCHEME, secure ? "https" : "http");
    return new RecordedTrace(this.tools, span);
  }

  /** Exports every span ended so far (tests; the batch timer does it otherwise). */
  forceFlush(): Promise<void> {
    return this.provider.forceFlush();
  }

  /**
   * Flushes the queue and stops the exporter. Waits at most 5 s: spans a dead collector has not
   * taken by then are given up (already counted as they failed, or not counted if still queued).
   */
  async shutdown(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, SHUTDOWN_TIMEOUT_MS);
      timer.unref();
    });
    // The batch processor skips the exporter's shutdown when its last flush failed: stop the
    // exporter here too, which waits for every export still in flight (and so counts it).
    const stopped = this.provider
      .shutdown()
      .catch(() => undefined)
      .then(() => this.exporter.shutdown())
      .catch(() => undefined);
    try {
      await Promise.race([stopped, limit]);
    } finally {
      clearTimeout(timer);
    }
  }
}
