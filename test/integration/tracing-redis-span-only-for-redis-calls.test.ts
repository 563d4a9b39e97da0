/**
 * SPEC §13 `ratelimit.redis` covers the limiter's calls to Redis and nothing else: with a real Redis
 * shared by two replicas, a caller whose budget another replica spent gets its first 429 from Redis
 * (a `ratelimit.redis` child span of its SERVER span), and the later 429s from the rejection cache
 *, which make no Redis call and record no `ratelimit.redis` span, while their
 * SERVER span still says `limited`.
 */
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import {
  KIND,
  STATUS,
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedSpan,
} from "../helpers/otlp-receiver.js";
import { scrape } from "../helpers/prom.js";
import { RedisServer } from "../helpers/redis-server.js";

let rx: OtlpReceiver;
let redis: RedisServer;
let upstream: { server: Server; url: string };
/** Traced at sample_ratio 1. */
let traced: TestGateway;
/** Another replica on the same Redis, without tracing. */
let replica: TestGateway;

const config = (tracing: boolean): Record<string, unknown> =>
  testConfig(upstream.url, {
    rate_limits: {
      store: { redis: { url: redis.url, key_prefix: "tracing-local429" } },
      classes: {
        write: { match: { methods: ["POST"] }, windows: [{ limit: 1, window_s: 3600 }] },
        read: { windows: [{ limit: 100, window_s: 3600 }] },
      },
    },
    ...(tracing ? { tracing: { endpoint: rx.endpoint, sample_ratio: 1 } } : {}),
  });

beforeAll(async () => {
  process.env.OTEL_BSP_SCHEDULE_DELAY = "50";
  [rx, redis, upstream] = await Promise.all([
    startOtlpReceiver(),
    RedisServer.start(),
    listen((_req, res) => res.end("ok")),
  ]);
  [traced, replica] = await Promise.all([startGateway(config(true)), startGateway(config(false))]);
});

afterAll(async () => {
  delete process.env.OTEL_BSP_SCHEDULE_DELAY;
  await Promise.all([traced?.close(), replica?.close()]);
  await Promise.all([upstream && closeServer(upstream.server), rx?.close(), redis?.destroy()]);
});

const post = (gw: TestGateway, traceId?: string) =>
  request(`${gw.url}/v1/items`, {
    method: "POST",
    headers: {
      authorization: "Bearer valid-token",
      ...(traceId === undefined ? {} : { traceparent: `00-${traceId}-00f067aa0ba902b7-01` }),
    },
  });

/**
 * The spans of `traceId` once its SERVER span arrived: it ends after its children, so they were
 * queued (and exported) before it.
 */
async function spansOf(traceId: string): Promise<ReceivedSpan[]> {
  const all = await rx.waitFor((s) => s.some((x) => x.traceId === traceId && x.kind === KIND.SERVER));
  return all.filter((s) => s.traceId === traceId);
}

const localRejections = async () =>
  (await scrape(traced.adminUrl)).value("gateway_ratelimit_local_rejections_total", { class: "write" });

describe("ratelimit.redis", () => {
  it("is recorded for a 429 Redis gave, and not for the later 429s answered without Redis", async () => {
    // The other replica spends alice's only write of the hour, so this gateway has nothing cached.
    expect((await post(replica)).status).toBe(200);

    const fromRedis = "8bf92f3577b34da6a3ce929d0e0e4736";
    expect((await post(traced, fromRedis)).status).toBe(429);
    const first = await spansOf(fromRedis);
    const server = first.find((s) => s.kind === KIND.SERVER)!;
    expect(server.attributes).toMatchObject({
      "http.response.status_code": 429,
      "gateway.ratelimit.class": "write",
      "gateway.ratelimit.decision": "limited",
    });
    const redisSpan = first.find((s) => s.name === "ratelimit.redis");
    expect(redisSpan).toMatchObject({
      kind: KIND.INTERNAL,
      parentSpanId: server.spanId,
      statusCode: STATUS.UNSET,
      attributes: { "db.system.name": "redis" },
    });
    expect(await localRejections()).toBe(0);

    for (const local of ["9bf92f3577b34da6a3ce929d0e0e4736", "abf92f3577b34da6a3ce929d0e0e4736"]) {
      expect((await post(traced, local)).status).toBe(429);
      const spans = await spansOf(local);
      expect(spans.map((s) => s.name)).toEqual(["POST /v1"]);
      expect(spans[0]!.attributes).toMatchObject({
        "http.response.status_code": 429,
        "gateway.ratelimit.decision": "limited",
        "gateway.ratelimit.remaining": 0,
        "gateway.error.code": "rate_limited",
      });
    }
    expect(await localRejections()).toBe(2);
  });
});

describe("ratelimit.redis of a Redis that does not answer", () => {
  it("is an error span (LimitStoreError) under the request's SERVER span", async () => {
    const hung = await RedisServer.start();
    const gw = await startGateway(
      testConfig(upstream.url, {
        rate_limits: {
          store: { redis: { url: hung.url, key_prefix: "tracing-hung", command_timeout_ms: 200 } },
          classes: { read: { windows: [{ limit: 100, window_s: 3600 }] } },
        },
        tracing: { endpoint: rx.endpoint, sample_ratio: 1 },
      }),
    );
    try {
      expect(
        (await request(`${gw.url}/v1/warm`, { headers: { authorization: "Bearer valid-token" } })).status,
      ).toBe(200);
      hung.pause();
      const traceId = "dbf92f3577b34da6a3ce929d0e0e4736";
      await request(`${gw.url}/v1/hung`, {
        headers: { authorization: "Bearer valid-token", traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
      });
      const spans = await spansOf(traceId);
      const server = spans.find((s) => s.kind === KIND.SERVER)!;
      const redisSpan = spans.find((s) => s.name === "ratelimit.redis");
      expect(redisSpan).toMatchObject({ parentSpanId: server.spanId, statusCode: STATUS.ERROR });
      expect(redisSpan!.attributes["error.type"]).toBe("LimitStoreError");
    } finally {
      await gw.close();
      await hung.destroy();
    }
  });
});
