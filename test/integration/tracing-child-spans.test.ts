/**
 * SPEC §13 child spans, with a real RFC 7662 server (oidc-provider) and a real Redis limit store:
 * an introspected call has `auth.introspection` and `ratelimit.redis` (db.system.name redis) under
 * its SERVER span, beside the CLIENT span, all in the client's trace; a cached token makes no
 * introspection span; the token appears in no span.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { introspectionAuthConfig, startAuthServer, type AuthServer } from "../helpers/oidc.js";
import { KIND, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../helpers/otlp-receiver.js";
import { RedisServer } from "../helpers/redis-server.js";

let rx: OtlpReceiver;
let redis: RedisServer;
let auth: AuthServer;
let upstream: Awaited<ReturnType<typeof listen>>;
let gw: TestGateway;

beforeAll(async () => {
  process.env.OTEL_BSP_SCHEDULE_DELAY = "50";
  [rx, redis, auth, upstream] = await Promise.all([
    startOtlpReceiver(),
    RedisServer.start(),
    startAuthServer(),
    listen((_req, res) => res.end("ok")),
  ]);
  gw = await startGateway(
    testConfig(upstream.url, {
      auth: introspectionAuthConfig(auth),
      rate_limits: {
        store: { redis: { url: redis.url, key_prefix: "tracing-child" } },
        classes: { read: { windows: [{ limit: 100, window_s: 3600 }] } },
      },
      tracing: { endpoint: rx.endpoint },
    }),
  );
});

afterAll(async () => {
  delete process.env.OTEL_BSP_SCHEDULE_DELAY;
  await gw?.close();
  await Promise.all([upstream && closeServer(upstream.server), rx?.close(), auth?.stop(), redis?.destroy()]);
});

async function traced(traceId: string, token: string, n: number): Promise<ReceivedSpan[]> {
  const r = await request(`${gw.url}/v1/items`, {
    headers: { authorization: `Bearer ${token}`, traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
  });
  expect(r.status).toBe(200);
  const all = await rx.waitFor((s) => s.filter((x) => x.traceId === traceId).length >= n);
  return all.filter((s) => s.traceId === traceId);
}

describe("child spans", () => {
  it("introspection and the Redis limiter call are children of the SERVER span, in the client's trace", async () => {
    const token = await auth.issueToken("read");
    const traceId = "5bf92f3577b34da6a3ce929d0e0e4736";
    const spans = await traced(traceId, token, 5);
    const byName = new Map(spans.map((s) => [s.name, s]));
    expect(spans.map((s) => s.name).sort()).toEqual([
      "GET",
      "GET /v1",
      "auth.introspection",
      "ratelimit.redis",
      "ratelimit.redis",
    ]);
    const srv = byName.get("GET /v1")!;
    expect(srv.kind).toBe(KIND.SERVER);
    const intro = byName.get("auth.introspection")!;
    expect(intro).toMatchObject({ kind: KIND.INTERNAL, parentSpanId: srv.spanId });
    expect(intro.attributes).toEqual({ "server.address": "127.0.0.1", "server.port": auth.port });
    // Two Redis calls: the anonymous-budget check before the introspection, the count after it.
    const [guard, limiter] = spans
      .filter((s) => s.name === "ratelimit.redis")
      .sort((x, y) => (x.startNs < y.startNs ? -1 : 1)) as [ReceivedSpan, ReceivedSpan];
    expect(guard).toMatchObject({ kind: KIND.INTERNAL, parentSpanId: srv.spanId });
    expect(guard.attributes).toEqual({ "db.system.name": "redis" });
    expect(limiter).toMatchObject({ kind: KIND.INTERNAL, parentSpanId: srv.spanId });
    expect(limiter.attributes).toEqual({ "db.system.name": "redis" });
    // The introspection call happened before the limiter call, both inside the SERVER span (give
    // or take the SDK's per-span anchoring of performance time to the millisecond wall clock).
    const ms = 1_000_000n;
    expect(guard.endNs <= intro.startNs + ms).toBe(true);
    expect(intro.endNs <= limiter.startNs + ms).toBe(true);
    for (const s of [intro, limiter])
      expect(s.startNs + ms >= srv.startNs && s.endNs <= srv.endNs + ms).toBe(true);
    expect(JSON.stringify(spans.map((s) => [s.name, s.attributes]))).not.toContain(token);
  });

  it("a refused cold token records the guard's read, the introspection, then the guard's and the anonymous counts", async () => {
    const traceId = "cbf92f3577b34da6a3ce929d0e0e4736";
    const r = await request(`${gw.url}/v1/items`, {
      headers: {
        authorization: "Bearer never-issued-token",
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
      },
    });
    expect(r.status).toBe(401);
    const all = await rx.waitFor((x) => x.filter((s) => s.traceId === traceId).length >= 5);
    const mine = all.filter((s) => s.traceId === traceId && s.kind !== KIND.SERVER);
    const order = mine.sort((x, y) => (x.startNs < y.startNs ? -1 : 1)).map((s) => s.name);
    // The two counts leave in one write (one round trip), each its own span.
    expect(order).toEqual(["ratelimit.redis", "auth.introspection", "ratelimit.redis", "ratelimit.redis"]);
  });

  it("GET /rate_limit records one Redis read per class of the caller's plan", async () => {
    const token = await auth.issueToken("read");
    await traced("8bf92f3577b34da6a3ce929d0e0e4736", token, 5);
    const traceId = "9bf92f3577b34da6a3ce929d0e0e4736";
    const r = await request(`${gw.url}/rate_limit`, {
      headers: { authorization: `Bearer ${token}`, traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    expect(r.status).toBe(200);
    const classes = Object.keys((JSON.parse(r.body) as { resources: Record<string, unknown> }).resources);
    expect(classes.length).toBeGreaterThan(0);
    const all = await rx.waitFor(
      (x) => x.filter((s) => s.traceId === traceId && s.name === "ratelimit.redis").length >= classes.length,
    );
    const mine = all.filter((s) => s.traceId === traceId);
    const server = mine.find((s) => s.kind === KIND.SERVER)!;
    const reads = mine.filter((s) => s.name === "ratelimit.redis");
    expect(reads).toHaveLength(classes.length);
    for (const read of reads) expect(read.parentSpanId).toBe(server.spanId);
  });

  it("a CORS preflight records its read of the anonymous window", async () => {
    const cors = await startGateway(
      testConfig(upstream.url, {
        auth: introspectionAuthConfig(auth),
        rate_limits: {
          store: { redis: { url: redis.url, key_prefix: "tracing-child-cors" } },
          classes: { read: { windows: [{ limit: 100, window_s: 3600 }] } },
        },
        cors: { allowed_origins: ["https://app.example.com"] },
        tracing: { endpoint: rx.endpoint },
      }),
    );
    try {
      const traceId = "abf92f3577b34da6a3ce929d0e0e4736";
      const r = await request(`${cors.url}/v1/items`, {
        method: "OPTIONS",
        headers: {
          origin: "https://app.example.com",
          "access-control-request-method": "GET",
          traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
        },
      });
      expect(r.status).toBe(204);
      const all = await rx.waitFor((x) => x.filter((s) => s.traceId === traceId).length >= 2);
      const mine = all.filter((s) => s.traceId === traceId);
      const server = mine.find((s) => s.kind === KIND.SERVER)!;
      expect(mine.filter((s) => s.name === "ratelimit.redis").map((s) => s.parentSpanId)).toEqual([
        server.spanId,
      ]);
    } finally {
      await cors.close();
    }
  });

  it("a cached token makes no introspection span", async () => {
    const token = await auth.issueToken("read");
    await traced("6bf92f3577b34da6a3ce929d0e0e4736", token, 4);
    const spans = await traced("7bf92f3577b34da6a3ce929d0e0e4736", token, 3);
    expect(spans.map((s) => s.name).sort()).toEqual(["GET", "GET /v1", "ratelimit.redis"]);
  });
});
