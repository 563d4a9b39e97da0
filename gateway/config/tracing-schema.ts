/**
 * The `tracing` block (SPEC §13): where OpenTelemetry spans go (OTLP/HTTP), how many new traces are
 * sampled, and the service name. Every key is optional: without `endpoint` the standard
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` variables decide, and
 * without either tracing is off (`observability/tracing/settings.ts` resolves the two).
 */
import { z } from "zod";

const otlpUrl = z
  .string({ error: "expected an http:// or https:// URL (OTLP/HTTP, e.g. http://127.0.0.1:4318/v1/traces)" })
  .refine((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol), {
    error: "expected an http:// or https:// URL (OTLP/HTTP, e.g. http://127.0.0.1:4318/v1/traces)",
  });

/** `tracing`: optional at the top level (an absent block is `{}`). */
export const tracingSchema = z.strictObject({
  endpoint: otlpUrl
    .optional()
    .describe(
      "OTLP/HTTP traces URL, used as given (…/v1/traces); absent: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT, else tracing is off.",
    ),
  sample_ratio: z
    .number({ error: "expected a number from 0 to 1" })
    .min(0, { error: "expected a number from 0 to 1" })
    .max(1, { error: "expected a number from 0 to 1" })
    .default(1)
    .describe("Share of new traces recorded; a client's traceparent decides by its own sampled flag."),
  service_name: z
    .string()
    .min(1)
    .optional()
    .describe("The `service.name` of every span; absent: OTEL_SERVICE_NAME, else `gateway`."),
});

/** The validated `tracing` block. */
export type TracingConfig = z.output<typeof tracingSchema>;
