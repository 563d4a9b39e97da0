/**
 * SPEC §13 `sample_ratio` between 0 and 1, against a real OTLP receiver: the gateway decides a new
 * trace's sampling before the SDK sees it (issue 16: an unsampled request costs no SDK span), so
 * this pins that the decision is the SDK's own ratio rule applied to the trace id the request
 * really carries: a request is recorded exactly when `TraceIdRatioBasedSampler(0.5)` samples its
 * trace id, the upstream's flag says the same, and a recorded SERVER span has the access line's ids.
 */
import type { IncomingHttpHeaders } from "node:http";
import { ROOT_CONTEXT } from "@opentelemetry/api";
import { SamplingDecision, TraceIdRatioBasedSampler } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, expect, it } from "vitest";
import { captureLog } from "../helpers/access-lines.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { startOtlpReceiver, type OtlpReceiver } from "../helpers/otlp-receiver.js";

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/;
const REQUESTS = 60;

let rx: OtlpReceiver;
let upstream: Awaited<ReturnType<typeof listen>>;
let gw: TestGateway;
const log = captureLog();
const seen = new Map<string, IncomingHttpHeaders>();

beforeAll(async () => {
  rx = await startOtlpReceiver();
  upstream = await listen((req, res) => {
    seen.set(req.url!, req.headers);
    res.end("ok");
  });
  gw = await startGateway(
    testConfig(upstream.url, {
      tracing: { endpoint: rx.endpoint, sample_ratio: 0.5 },
      log: { level: "info" },
    }),
    { logger: log.logger },
  );
});

afterAll(async () => {
  await gw?.close();
  await Promise.all([upstream && closeServer(upstream.server), rx?.close()]);
});

it("records a new trace exactly when the SDK's ratio rule samples its id, with the access line's ids", async () => {
  for (let i = 0; i < REQUESTS; i++) {
    const r = await request(`${gw.url}/v1/r${i}`, { headers: { authorization: "Bearer valid-token" } });
    expect(r.status).toBe(200);
  }
  await gw.gateway.runtime.tracing!.forceFlush();
  const rule = new TraceIdRatioBasedSampler(0.5);
  const lines = log.accessLines(gw);
  let sampled = 0;
  for (let i = 0; i < REQUESTS; i++) {
    const [, traceId, , flags] = TRACEPARENT.exec(String(seen.get(`/v1/r${i}`)?.traceparent))!;
    const line = lines.find((l) => l.path === `/v1/r${i}`)!;
    expect(line.traceId).toBe(traceId);
    const chosen = rule.shouldSample(ROOT_CONTEXT, traceId!).decision === SamplingDecision.RECORD_AND_SAMPLED;
    expect(flags).toBe(chosen ? "01" : "00");
    const server = rx.spans.find((s) => s.traceId === traceId && s.name === "GET /v1");
    if (chosen) {
      sampled++;
      expect(server?.spanId).toBe(line.spanId);
    } else expect(rx.spans.filter((s) => s.traceId === traceId)).toEqual([]);
  }
  // 60 fair draws: both kinds occur (all of one kind has probability 2 * 2^-60).
  expect(sampled).toBeGreaterThan(0);
  expect(sampled).toBeLessThan(REQUESTS);
});
