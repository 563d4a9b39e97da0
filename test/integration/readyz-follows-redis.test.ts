/**
 * SPEC §8: with `failure_mode: closed`, `GET /readyz` answers 503 within 5 s of Redis becoming
 * unreachable "whether or not any request was made", and 200 again once Redis answers. Not one API
 * request is sent here: the gateway must notice a killed Redis (the connection closes) and a hung
 * one (SIGSTOP: the connection stays open, nothing answers) on its own. With `open` the replica
 * stays ready, but the outage still shows in the degraded gauge without traffic.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { request } from "../helpers/http.js";
import { RedisServer, waitFor } from "../helpers/redis-server.js";

/** SPEC §8's bound. */
const WITHIN_MS = 5000;

let redis: RedisServer;

beforeAll(async () => {
  redis = await RedisServer.start();
});

afterAll(async () => {
  await redis.destroy();
});

async function gatewayOn(failureMode: "open" | "closed"): Promise<TestGateway> {
  return startGateway(
    testConfig("http://127.0.0.1:9", {
      rate_limits: {
        store: { redis: { url: redis.url, key_prefix: `readyz-${failureMode}` } },
        failure_mode: failureMode,
        classes: { read: { windows: [{ limit: 10, window_s: 60 }] } },
      },
    }),
  );
}

const readyz = async (gw: TestGateway) => (await request(`${gw.adminUrl}/readyz`)).status;

async function metric(gw: TestGateway, name: string): Promise<string | undefined> {
  const text = (await request(`${gw.adminUrl}/metrics`)).body;
  return new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(text)?.[1];
}

/** Resolves with the milliseconds until `/readyz` answered `status`. */
async function msUntilReadyz(gw: TestGateway, status: number): Promise<number> {
  const started = performance.now();
  await waitFor(`/readyz ${status}`, async () => (await readyz(gw)) === status, WITHIN_MS + 1000);
  return performance.now() - started;
}

describe("failure_mode: closed, no traffic at all", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await gatewayOn("closed");
    await waitFor("the Redis connection", async () => (await readyz(gw)) === 200);
  });
  afterAll(async () => {
    await gw.close();
  });

  it("a killed Redis makes /readyz 503 within 5 s, and a restarted one 200 again", async () => {
    await redis.stop();
    expect(await msUntilReadyz(gw, 503)).toBeLessThan(WITHIN_MS);
    // The outage is opened (and counted) by the gateway's own check, not by a request.
    await waitFor(
      "the degraded gauge",
      async () => (await metric(gw, "gateway_ratelimit_store_degraded")) === "1",
    );
    await redis.start();
    expect(await msUntilReadyz(gw, 200)).toBeLessThan(WITHIN_MS);
    expect(await metric(gw, "gateway_ratelimit_store_degraded")).toBe("0");
    expect(await metric(gw, "gateway_requests_total")).toBeUndefined();
  });

  it("a hung Redis (SIGSTOP: connection open, no answers) makes /readyz 503 within 5 s", async () => {
    redis.pause();
    try {
      expect(await msUntilReadyz(gw, 503)).toBeLessThan(WITHIN_MS);
      expect(await metric(gw, "gateway_ratelimit_store_degraded")).toBe("1");
    } finally {
      redis.resume();
    }
    expect(await msUntilReadyz(gw, 200)).toBeLessThan(WITHIN_MS);
    expect(await metric(gw, "gateway_requests_total")).toBeUndefined();
  });
});

describe("failure_mode: open, no traffic at all", () => {
  it("stays ready while Redis is down, and reports the outage in the degraded gauge", async () => {
    const gw = await gatewayOn("open");
    try {
      await redis.stop();
      await waitFor(
        "the degraded gauge",
        async () => (await metric(gw, "gateway_ratelimit_store_degraded")) === "1",
        WITHIN_MS,
      );
      expect(await readyz(gw)).toBe(200);
      await redis.start();
      await waitFor(
        "the outage to end",
        async () => (await metric(gw, "gateway_ratelimit_store_degraded")) === "0",
        WITHIN_MS,
      );
    } finally {
      await gw.close();
    }
  });
});
