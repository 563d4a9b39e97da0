/**
 * SPEC §13 configuration precedence, as data: the YAML endpoint, then
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (as given), then `OTEL_EXPORTER_OTLP_ENDPOINT` (+ `/v1/traces`),
 * else off; service name YAML, then `OTEL_SERVICE_NAME`, then `gateway`; the batch settings from
 * `OTEL_BSP_*` with the gateway's 1 s default delay, the batch never larger than the queue.
 */
import { describe, expect, it } from "vitest";
import { tracingSchema } from "../../gateway/config/tracing-schema.js";
import { tracingSettings } from "../../gateway/observability/tracing/settings.js";

const cfg = (input: Record<string, unknown> = {}) => tracingSchema.parse(input);

describe("tracingSettings", () => {
  it("is off without an endpoint anywhere", () => {
    expect(tracingSettings(cfg(), {})).toBeNull();
    expect(
      tracingSettings(cfg({ sample_ratio: 0.5, service_name: "x" }), { OTEL_SERVICE_NAME: "y" }),
    ).toBeNull();
    expect(tracingSettings(cfg(), { OTEL_EXPORTER_OTLP_ENDPOINT: "  " })).toBeNull();
  });

  it("takes the endpoint from YAML, then the traces variable as given, then the base variable + /v1/traces", () => {
    const env = {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://traces:4318/custom",
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://base:4318/",
    };
    expect(tracingSettings(cfg({ endpoint: "http://yaml:4318/v1/traces" }), env)?.endpoint).toBe(
      "http://yaml:4318/v1/traces",
    );
    expect(tracingSettings(cfg(), env)?.endpoint).toBe("http://traces:4318/custom");
    expect(tracingSettings(cfg(), { OTEL_EXPORTER_OTLP_ENDPOINT: "http://base:4318/" })?.endpoint).toBe(
      "http://base:4318/v1/traces",
    );
  });

  it("names the service from YAML, then OTEL_SERVICE_NAME, then gateway", () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" };
    expect(
      tracingSettings(cfg({ service_name: "yaml" }), { ...on, OTEL_SERVICE_NAME: "env" })?.serviceName,
    ).toBe("yaml");
    expect(tracingSettings(cfg(), { ...on, OTEL_SERVICE_NAME: "env" })?.serviceName).toBe("env");
    expect(tracingSettings(cfg(), on)?.serviceName).toBe("gateway");
  });

  it("samples every new trace by default and the configured share otherwise", () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" };
    expect(tracingSettings(cfg(), on)?.sampleRatio).toBe(1);
    expect(tracingSettings(cfg({ sample_ratio: 0.01 }), on)?.sampleRatio).toBe(0.01);
  });

  it("bounds the batch processor from OTEL_BSP_*, ignoring values that are not positive integers", () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" };
    expect(tracingSettings(cfg(), on)).toMatchObject({
      maxQueueSize: 2048,
      maxExportBatchSize: 512,
      scheduledDelayMs: 1000,
      exportTimeoutMs: 30000,
    });
    expect(
      tracingSettings(cfg(), {
        ...on,
        OTEL_BSP_MAX_QUEUE_SIZE: "100",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "512",
        OTEL_BSP_SCHEDULE_DELAY: "5000",
        OTEL_BSP_EXPORT_TIMEOUT: "-1",
      }),
    ).toMatchObject({
      maxQueueSize: 100,
      maxExportBatchSize: 100,
      scheduledDelayMs: 5000,
      exportTimeoutMs: 30000,
    });
    expect(tracingSettings(cfg(), { ...on, OTEL_BSP_MAX_QUEUE_SIZE: "lots" })?.maxQueueSize).toBe(2048);
  });
});
