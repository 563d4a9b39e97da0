/**
 * SPEC §13 sampling, against a real OTLP receiver: `sample_ratio` applies to new traces only; a
 * valid client `traceparent` decides by its flag (01 recorded and exported, 00 neither), and the
 * upstream's `traceparent` carries that decision with the gateway's CLIENT span as parent. The
 * access line carries the trace and SERVER span ids whether sampled or not. "Records nothing" is
 * checked after a forced flush of the gateway's span queue, not after a sleep.
 */
import type { IncomingHttpHeaders } from "node:http";
import { ROOT_CONTEXT } from "@opentelemetry/api";
import { SamplingDecision, TraceIdRatioBasedSampler } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { captureLog } from "../helpers/access-lines.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { startOtlpReceiver, type OtlpReceiver } from "../helpers/otlp-receiver.js";

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/;
const CLIENT_SPAN = "b7ad6b7169203331";

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
      tracing: { endpoint: rx.endpoint, sample_ratio: 0 },
      log: { level: "info" },
    }),
    { logger: log.logger },
  );
});

afterAll(async () => {
  await gw?.close();
  await Promise.all([upstream && closeServer(upstream.server), rx?.close()]);
});

/** Sends `path` with `headers` and returns the upstream's traceparent, parsed, and the access line. */
async function send(path: string, headers: Record<string, string> = {}) {
  const r = await request(`${gw.url}${path}`, {
    headers: { authorization: "Bearer valid-token", ...headers },
  });
  expect(r.status).toBe(200);
  const [, traceId, parentId, flags] = TRACEPARENT.exec(String(seen.get(path)?.traceparent))!;
  const line = log.accessLines(gw).find((l) => l.path === path)!;
  return { traceId: traceId!, parentId: parentId!, flags: flags!, line };
}

/** Spans of `traceId` the receiver got once everything ended so far was exported. */
async function recorded(traceId: string): Promise<number> {
  await gw.gateway.runtime.tracing!.forceFlush();
  return rx.spans.filter((s) => s.traceId === traceId).length;
}

describe("sample_ratio 0", () => {
  it("records no new trace, yet the access line and the upstream carry its ids (flag 00)", async () => {
    const { traceId, parentId, flags, line } = await send("/v1/new");
    expect(flags).toBe("00");
    expect(line.traceId).toBe(traceId);
    expect(line.spanId).toMatch(/^[0-9a-f]{16}$/);
    // The upstream's parent is the CLIENT span, not the SERVER span the access line names.
    expect(parentId).not.toBe(line.spanId);
    expect(await recorded(traceId)).toBe(0);
  });

  it("still continues a sampled parent (01): every span recorded, the upstream gets 01", async () => {
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const sent = await send("/v1/sampled", { traceparent: `00-${traceId}-${CLIENT_SPAN}-01` });
    expect(sent).toMatchObject({ traceId, flags: "01" });
    const spans = await rx.waitFor((all) => all.filter((s) => s.traceId === traceId).length >= 2);
    const mine = spans.filter((s) => s.traceId === traceId);
    expect(mine.map((s) => s.name).sort()).toEqual(["GET", "GET /v1"]);
    expect(mine.find((s) => s.name === "GET /v1")!.parentSpanId).toBe(CLIENT_SPAN);
    expect(mine.find((s) => s.name === "GET")!.spanId).toBe(sent.parentId);
    expect(sent.line).toMatchObject({ traceId, spanId: mine.find((s) => s.name === "GET /v1")!.spanId });
  });

  it("respects an unsampled parent (00): nothing recorded, the upstream's traceparent carries 00", async () => {
    const traceId = "1af7651916cd43dd8448eb211c80319c";
    const sent = await send("/v1/unsampled", { traceparent: `00-${traceId}-${CLIENT_SPAN}-00` });
    expect(sent).toMatchObject({ traceId, flags: "00" });
    expect(sent.parentId).not.toBe(CLIENT_SPAN);
    expect(sent.line.traceId).toBe(traceId);
    expect(await recorded(traceId)).toBe(0);
  });

  it("keeps an unsampled parent's tracestate for the upstream, unchanged", async () => {
    const traceId = "2af7651916cd43dd8448eb211c80319c";
    const sent = await send("/v1/unsampled-state", {
      traceparent: `00-${traceId}-${CLIENT_SPAN}-00`,
      tracestate: "vendor=abc,other=1",
    });
    expect(sent).toMatchObject({ traceId, flags: "00" });
    expect(seen.get("/v1/unsampled-state")?.tracestate).toBe("vendor=abc,other=1");
  });

  it("starts a new trace for an invalid traceparent (all-zero trace id), without its tracestate", async () => {
    const invalid = `00-${"0".repeat(32)}-${CLIENT_SPAN}-01`;
    const sent = await send("/v1/invalid", { traceparent: invalid, tracestate: "vendor=stale" });
    expect(sent.traceId).not.toBe("0".repeat(32));
    expect(sent.flags).toBe("00");
    expect(sent.line.traceId).toBe(sent.traceId);
    expect(seen.get("/v1/invalid")).not.toHaveProperty("tracestate");
  });
});

/**
 * A ratio between 0 and 1: the gateway decides a new trace's sampling before the SDK sees it
 * (an unsampled request costs no SDK span), so this pins that the decision is the SDK's
 * own ratio rule applied to the trace id the request really carries: a request is recorded exactly
 * when `TraceIdRatioBasedSampler(0.5)` samples its trace id, the upstream's flag says the same, and
 * a recorded SERVER span has the access line's ids.
 */
describe("sample_ratio 0.5", () => {
  const REQUESTS = 60;
  let half: TestGateway;

  beforeAll(async () => {
    half = await startGateway(
      testConfig(upstream.url, {
        tracing: { endpoint: rx.endpoint, sample_ratio: 0.5 },
        log: { level: "info" },
      }),
      { logger: log.logger },
    );
  });

  afterAll(async () => {
    await half?.close();
  });

  it("records a new trace exactly when the SDK's ratio rule samples its id, with the access line's ids", async () => {
    for (let i = 0; i < REQUESTS; i++) {
      const r = await request(`${half.url}/v1/r${i}`, { headers: { authorization: "Bearer valid-token" } });
      expect(r.status).toBe(200);
    }
    await half.gateway.runtime.tracing!.forceFlush();
    const rule = new TraceIdRatioBasedSampler(0.5);
    const lines = log.accessLines(half);
    let sampled = 0;
    for (let i = 0; i < REQUESTS; i++) {
      const [, traceId, , flags] = TRACEPARENT.exec(String(seen.get(`/v1/r${i}`)?.traceparent))!;
      const line = lines.find((l) => l.path === `/v1/r${i}`)!;
      expect(line.traceId).toBe(traceId);
      const chosen =
        rule.shouldSample(ROOT_CONTEXT, traceId!).decision === SamplingDecision.RECORD_AND_SAMPLED;
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
});
