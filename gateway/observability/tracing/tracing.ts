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
import { ROOT_CONTEXT, SpanKind, defaultTextMapGetter, type Tracer } from "@opentelemetry/api";
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
  TraceIdRatioBasedSampler,
  type BufferConfig,
} from "@opentelemetry/sdk-trace-base";
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION,
  ATTR_URL_SCHEME,
} from "@opentelemetry/semantic-conventions";
import type { MeterProvider } from "@opentelemetry/api";
import type { HeaderMap } from "../../facts.js";
import { httpMethod, RequestTrace, spanMethod, type TraceTools } from "./request-trace.js";
import type { TracingSettings } from "./settings.js";
import { CountingExporter, queueDropMeterProvider, type SpanOutcomes } from "./span-accounting.js";

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

  /**
   * @param outcomes - told of every sampled span's fate (the `gateway_tracing_spans_*` counters)
   * @param version - the gateway's version (`service.version`)
   */
  constructor(settings: TracingSettings, outcomes: SpanOutcomes, version: string) {
    this.settings = settings;
    const ids = new RandomIdGenerator();
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
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.sampleRatio) }),
      spanProcessors: [new BatchSpanProcessor(exporter, batch)],
      idGenerator: ids,
    });
    this.tracer = this.provider.getTracer("gateway", version);
    this.tools = { tracer: this.tracer, propagator: this.propagator, ids };
  }

  /**
   * Starts a request's SERVER span, named `<METHOD>` until the route is known, continuing the
   * client's trace when its `traceparent` is valid (W3C Trace Context §3.2; `tracestate` §3.3).
   * @param headers - the request's header fields, or null (a request the parser refused)
   * @param startMs - `performance.now()` at accept (ms)
   * @param secure - the client connection is TLS (`url.scheme`)
   */
  begin(headers: HeaderMap | null, method: string, startMs: number, secure: boolean): RequestTrace {
    const parent =
      headers === null || headers.traceparent === undefined
        ? ROOT_CONTEXT
        : this.propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
    const span = this.tracer.startSpan(
      spanMethod(method),
      { kind: SpanKind.SERVER, startTime: startMs },
      parent,
    );
    if (span.isRecording()) {
      span.setAttribute(ATTR_HTTP_REQUEST_METHOD, httpMethod(method));
      span.setAttribute(ATTR_URL_SCHEME, secure ? "https" : "http");
    }
    return new RequestTrace(this.tools, span);
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
