/**
 * What tracing runs with (SPEC §13), from the `tracing` block and the standard OpenTelemetry
 * environment variables (OpenTelemetry "Environment Variable Specification" and "OTLP Exporter
 * Configuration"): the YAML `endpoint` wins over `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, which wins
 * over `OTEL_EXPORTER_OTLP_ENDPOINT` (+ `/v1/traces`); with none of them tracing is off. The
 * exporter reads the other `OTEL_EXPORTER_OTLP_*` variables (headers, timeout, compression,
 * certificates) itself.
 */
import type { TracingConfig } from "../../config/tracing-schema.js";
import type { Milliseconds } from "../../base/clock.js";

/** Resolved tracing settings; null from {@link tracingSettings} means tracing is off. */
export interface TracingSettings {
  /** The OTLP/HTTP traces URL spans are POSTed to (protobuf bodies). */
  readonly endpoint: string;
  /** Share of new traces recorded, in [0, 1]. */
  readonly sampleRatio: number;
  /** The resource's `service.name`. */
  readonly serviceName: string;
  /** Ended spans waiting for export; more are dropped (`queue_full`). @default 2048 (spans) */
  readonly maxQueueSize: number;
  /** Spans per export request. @default 512 (spans), at most `maxQueueSize` */
  readonly maxExportBatchSize: number;
  /**
   * Longest wait before queued spans are sent. The gateway's default is 1000 ms, not the SDK's
   * 5000, so a span reaches a healthy collector within 5 s of ending (SPEC §13).
   * @default 1000 (ms)
   */
  readonly scheduledDelayMs: Milliseconds;
  /** Time the batch processor waits for one export before moving on. @default 30000 (ms) */
  readonly exportTimeoutMs: Milliseconds;
}

/** Default `OTEL_BSP_SCHEDULE_DELAY` of the gateway (ms). */
const SCHEDULE_DELAY_MS = 1000;

/**
 * @param config - the validated `tracing` block
 * @param env - the process environment (the `OTEL_*` variables)
 * @returns the settings, or null when no endpoint is configured (tracing off)
 */
export function tracingSettings(
  config: TracingConfig,
  env: Readonly<Record<string, string | undefined>>,
): TracingSettings | null {
  const endpoint = config.endpoint ?? envEndpoint(env);
  if (endpoint === undefined) return null;
  const maxQueueSize = positive(env.OTEL_BSP_MAX_QUEUE_SIZE, 2048);
  return {
    endpoint,
    sampleRatio: config.sample_ratio,
    serviceName: config.service_name ?? nonEmpty(env.OTEL_SERVICE_NAME) ?? "gateway",
    maxQueueSize,
    maxExportBatchSize: Math.min(positive(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, 512), maxQueueSize),
    scheduledDelayMs: positive(env.OTEL_BSP_SCHEDULE_DELAY, SCHEDULE_DELAY_MS),
    exportTimeoutMs: positive(env.OTEL_BSP_EXPORT_TIMEOUT, 30_000),
  };
}

/** The traces URL from the environment, as the OTLP exporter specification builds it. */
function envEndpoint(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const traces = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  if (traces !== undefined) return traces;
  const base = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  return base === undefined ? undefined : `${base.replace(/\/+$/, "")}/v1/traces`;
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}

/** A positive integer from the environment, else `fallback`. */
function positive(v: string | undefined, fallback: number): number {
  const n = Number(nonEmpty(v) ?? NaN);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}
