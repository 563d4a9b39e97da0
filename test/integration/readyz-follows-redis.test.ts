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

describe("no traffic at all", () => {
  let closed: TestGateway;
  let open: TestGateway;
  beforeAll(async () => {
    [closed, open] = await Promise.all([gatewayOn("closed"), gatewayOn("open")]);
    await waitFor("the Redis connection", async () => (await readyz(closed)) === 200);
  });
  afterAll(async () => {
    await Promise.all([closed.close(), open.close()]);
  });

  it("a killed Redis makes /readyz 503 within 5 s (closed; open stays ready), a restarted one 200", async () => {
    await redis.stop();
    expect(await msUntilReadyz(closed, 503)).toBeLessThan(WITHIN_MS);
    // The outage is opened (and counted) by each gateway's own check, not by a request.
    for (const gw of [closed, open]) {
      await waitFor(
        "the degraded gauge",
        async () => (await metric(gw, "gateway_ratelimit_store_degraded")) === "1",
      );
    }
    expect(await readyz(open)).toBe(200);
    await redis.start();
    expect(await msUntilReadyz(closed, 200)).toBeLessThan(WITHIN_MS);
    await waitFor(
      "the open gateway's outage to end",
      async () => (await metric(open, "gateway_ratelimit_store_degraded")) === "0",
    );
    expect(await metric(closed, "gateway_ratelimit_store_degraded")).toBe("0");
    for (const gw of [closed, open]) expect(await metric(gw, "gateway_requests_total")).toBeUndefined();
  });

  it("a hung Redis (SIGSTOP: connection open, no answers) makes /readyz 503 within 5 s", async () => {
    redis.pause();
    try {
      expect(await msUntilReadyz(closed, 503)).toBeLessThan(WITHIN_MS);
      expect(await metric(closed, "gateway_ratelimit_store_degraded")).toBe("1");
    } finally {
      redis.resume();
    }
    expect(await msUntilReadyz(closed, 200)).toBeLessThan(WITHIN_MS);
    expect(await metric(closed, "gateway_requests_total")).toBeUndefined();
  });
});
