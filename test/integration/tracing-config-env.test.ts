/**
 * SPEC §13 configuration: the YAML `endpoint` wins; without it `OTEL_EXPORTER_OTLP_ENDPOINT` (with
 * `/v1/traces` appended) turns tracing on and `OTEL_SERVICE_NAME` names the service; without
 * either, tracing is off: the upstream gets the client's trace headers unchanged and the access
 * line has no trace ids. A reload keeps the tracer while its settings stay, and swaps it when
 * they change. Each case sets the process environment before the gateway starts and restores it.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { captureLog } from "../helpers/access-lines.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { startOtlpReceiver, type OtlpReceiver } from "../helpers/otlp-receiver.js";

const VARS = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SERVICE_NAME"];
const CLIENT_TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

let rx: OtlpReceiver;
let other: OtlpReceiver;
let upstream: Awaited<ReturnType<typeof listen>>;
let lastHeaders: IncomingHttpHeaders = {};
let gw: TestGateway | undefined;
const dir = mkdtempSync(path.join(tmpdir(), "tracing-config-"));

beforeAll(async () => {
  [rx, other, upstream] = await Promise.all([
    startOtlpReceiver(),
    startOtlpReceiver(),
    listen((req, res) => {
      lastHeaders = req.headers;
      res.end("ok");
    }),
  ]);
});

afterEach(async () => {
  for (const v of VARS) delete process.env[v];
  await gw?.close();
  gw = undefined;
});

afterAll(async () => {
  await Promise.all([closeServer(upstream.server), rx.close(), other.close()]);
  rmSync(dir, { recursive: true, force: true });
});

const base = (receiver: OtlpReceiver) => receiver.endpoint.replace(/\/v1\/traces$/, "");

async function get(target: TestGateway, headers: Record<string, string> = {}): Promise<void> {
  const r = await request(`${target.url}/v1/items`, {
    headers: { authorization: "Bearer valid-token", ...headers },
  });
  expect(r.status).toBe(200);
}

describe("tracing configuration", () => {
  it("OTEL_EXPORTER_OTLP_ENDPOINT turns it on without the YAML key; OTEL_SERVICE_NAME names the service", async () => {
    Object.assign(process.env, { OTEL_EXPORTER_OTLP_ENDPOINT: `${base(rx)}/`, OTEL_SERVICE_NAME: "edge-gw" });
    gw = await startGateway(testConfig(upstream.url));
    expect(gw.gateway.runtime.tracing?.settings.endpoint).toBe(rx.endpoint);
    await get(gw, { traceparent: CLIENT_TRACEPARENT });
    const spans = await rx.waitFor((s) => s.some((x) => x.traceId === "0af7651916cd43dd8448eb211c80319c"));
    expect(spans.at(-1)!.resource["service.name"]).toBe("edge-gw");
  });

  it("the YAML endpoint and service_name win over the environment", async () => {
    Object.assign(process.env, { OTEL_EXPORTER_OTLP_ENDPOINT: base(other), OTEL_SERVICE_NAME: "from-env" });
    gw = await startGateway(
      testConfig(upstream.url, { tracing: { endpoint: rx.endpoint, service_name: "from-yaml" } }),
    );
    await get(gw);
    const traceId = /^00-([0-9a-f]{32})-/.exec(String(lastHeaders.traceparent))![1]!;
    const spans = await rx.waitFor((s) => s.some((x) => x.traceId === traceId));
    expect(spans.find((x) => x.traceId === traceId)!.resource["service.name"]).toBe("from-yaml");
    await gw.gateway.runtime.tracing!.forceFlush();
    expect(other.spans).toEqual([]);
  });

  it("without an endpoint it is off: client trace headers pass unchanged, no ids on the access line", async () => {
    const log = captureLog();
    gw = await startGateway(testConfig(upstream.url, { log: { level: "info" } }), { logger: log.logger });
    expect(gw.gateway.runtime.tracing).toBeNull();
    await get(gw, { traceparent: CLIENT_TRACEPARENT, tracestate: "vendor=x" });
    expect(lastHeaders).toMatchObject({ traceparent: CLIENT_TRACEPARENT, tracestate: "vendor=x" });
    const line = log.accessLines(gw).at(-1)!;
    expect(line).not.toHaveProperty("traceId");
    expect(line).not.toHaveProperty("spanId");
  });

  it("a reload keeps the tracer while its settings stay, and swaps it when they change", async () => {
    const file = path.join(dir, "gateway.yaml");
    const config = (tracing: Record<string, unknown>) => stringify(testConfig(upstream.url, { tracing }));
    writeFileSync(file, config({ endpoint: rx.endpoint }));
    gw = await startGateway(testConfig(upstream.url, { tracing: { endpoint: rx.endpoint } }));
    const first = gw.gateway.runtime.tracing;
    expect(first).not.toBeNull();
    expect(await gw.gateway.reload(file)).toBe(true);
    expect(gw.gateway.runtime.tracing).toBe(first);
    writeFileSync(file, config({ endpoint: rx.endpoint, sample_ratio: 0.5 }));
    expect(await gw.gateway.reload(file)).toBe(true);
    expect(gw.gateway.runtime.tracing).not.toBe(first);
    expect(gw.gateway.runtime.tracing!.settings.sampleRatio).toBe(0.5);
    writeFileSync(file, config({}));
    expect(await gw.gateway.reload(file)).toBe(true);
    expect(gw.gateway.runtime.tracing).toBeNull();
  });
});
