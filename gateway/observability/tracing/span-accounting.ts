/**
 * Where every sampled span ends up, counted (SPEC §13): delivered to the collector, dropped because
 * the batch queue was full, or lost in a failed export. Two hooks of the OpenTelemetry SDK, no
 * private fields: the exporter is wrapped (each export's result), and the batch processor's own
 * self-observability meter reports its `queue_full` drops (`otel.sdk.processor.span.processed`
 * with `error.type`, OpenTelemetry semantic conventions "SDK metrics").
 */
import { createNoopMeter, type Attributes, type Meter, type MeterProvider } from "@opentelemetry/api";
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base";
import { ATTR_ERROR_TYPE } from "@opentelemetry/semantic-conventions";
import type { SpanDropReason } from "../../base/results.js";
import type { GatewayMetrics } from "../metrics.js";

/** What happened to spans, by count. */
export interface SpanOutcomes {
  /** `n` spans reached the collector (it answered 2xx). */
  exported(n: number): void;
  /** `n` spans were dropped: the queue was full, or their export failed (after its retries). */
  dropped(n: number, reason: SpanDropReason): void;
}

/** {@link SpanOutcomes} counted in `gateway_tracing_spans_exported_total` and `_dropped_total`. */
export function metricOutcomes(metrics: GatewayMetrics): SpanOutcomes {
  const queueFull = metrics.tracingSpansDropped.labels({ reason: "queue_full" });
  const exportFailed = metrics.tracingSpansDropped.labels({ reason: "export_failed" });
  return {
    exported: (n) => metrics.tracingSpansExported.inc(n),
    dropped: (n, reason) => (reason === "queue_full" ? queueFull : exportFailed).inc(n),
  };
}

/** An exporter that reports each export's result before passing it on. */
export class CountingExporter implements SpanExporter {
  constructor(
    private readonly inner: SpanExporter,
    private readonly outcomes: SpanOutcomes,
  ) {}

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    const n = spans.length;
    this.inner.export(spans, (result) => {
      if (result.code === ExportResultCode.SUCCESS) this.outcomes.exported(n);
      else this.outcomes.dropped(n, "export_failed");
      resultCallback(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

/** The batch processor's name for "processed" spans (its only counter). */
const PROCESSED = "otel.sdk.processor.span.processed";

/**
 * A meter provider for the batch processor's `selfObsMeterProvider` that turns its
 * `error.type: queue_full` counts into {@link SpanOutcomes.dropped}; every other instrument is a
 * no-op (exported spans and failed exports are counted by {@link CountingExporter}).
 */
export function queueDropMeterProvider(outcomes: SpanOutcomes): MeterProvider {
  const noop = createNoopMeter();
  const meter: Meter = Object.create(noop) as Meter;
  meter.createCounter = (name, options) => {
    if (name !== PROCESSED) return noop.createCounter(name, options);
    return {
      add(value: number, attributes?: Attributes) {
        if (attributes?.[ATTR_ERROR_TYPE] === "queue_full") outcomes.dropped(value, "queue_full");
      },
    };
  };
  return { getMeter: () => meter };
}
