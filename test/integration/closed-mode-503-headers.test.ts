/**
 * The 503 `Rate limit service unavailable` of `failure_mode: closed` (Redis down) carries every
 * header a gateway answer promises: `Content-Type`/`Content-Length` of the catalogue's JSON body,
 * `Retry-After`, `X-Request-Id` (the client's, or a generated one), and the rate-limit headers of
 * the class the call would have spent: `X-RateLimit-Limit` (its first window), `-Remaining: 0`,
 * `-Reset`, `-Resource`. A real redis-server, killed before the calls.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { request, type TestResponse } from "../helpers/http.js";
import { RedisServer } from "../helpers/redis-server.js";

const BODY = '{"error":{"code":503,"message":"Rate limit service unavailable"}}';
let redis: RedisServer;
let gw: TestGateway;

beforeAll(async () => {
  redis = await RedisServer.start();
  gw = await startGateway(
    testConfig("http://127.0.0.1:9", {
      headers: { ietf: true },
      rate_limits: {
        store: { redis: { url: redis.url, key_prefix: "closed503" } },
        failure_mode: "closed",
        classes: {
          read: {
            windows: [
              { limit: 10, window_s: 60 },
              { limit: 100, window_s: 3600 },
            ],
          },
        },
        anonymous: { windows: [{ limit: 30, window_s: 3600 }] },
      },
    }),
  );
  await redis.stop();
});

afterAll(async () => {
  await gw.close();
  await redis.destroy();
});

/** The headers every closed-mode 503 has, whoever asked. */
function expectUnavailable(res: TestResponse, resource: string, limit: string): void {
  expect(res.status).toBe(503);
  expect(res.body).toBe(BODY);
  expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
  expect(res.headers["content-length"]).toBe(String(Buffer.byteLength(BODY)));
  expect(res.headers["retry-after"]).toBe("5");
  expect(res.headers["x-ratelimit-limit"]).toBe(limit);
  expect(res.headers["x-ratelimit-remaining"]).toBe("0");
  expect(res.headers["x-ratelimit-reset"]).toMatch(/^\d+$/);
  expect(Number(res.headers["x-ratelimit-reset"])).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));
  expect(res.headers["x-ratelimit-resource"]).toBe(resource);
  expect(res.headers["www-authenticate"]).toBeUndefined();
}

describe("the closed-mode 503", () => {
  it("of an authenticated call: the class's headers and the client's X-Request-Id", async () => {
    const res = await request(`${gw.url}/v1/user`, {
      headers: { authorization: "Bearer valid-token", "x-request-id": "trace-503" },
    });
    expectUnavailable(res, "read", "10");
    expect(res.headers["x-request-id"]).toBe("trace-503");
  });

  it("of a call without a token: the anonymous class's headers and a generated X-Request-Id", async () => {
    const res = await request(`${gw.url}/v1/user`);
    expectUnavailable(res, "anonymous", "30");
    expect(res.headers["x-request-id"]).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    );
  });
});

describe("the closed-mode 503 and the rest of the contract", () => {
  // The Reset rule: with Remaining 0, Reset is when a call may next be admitted and Retry-After is
  // Reset − now rounded up. The 503 sends Retry-After 5 but a Reset one second ahead.
  it("Reset agrees with Retry-After", async () => {
    const res = await request(`${gw.url}/v1/user`, { headers: { authorization: "Bearer valid-token" } });
    const resetInS = Number(res.headers["x-ratelimit-reset"]) - Date.now() / 1000;
    expect(Math.max(1, Math.ceil(resetInS))).toBe(Number(res.headers["retry-after"]));
  });

  // headers.ietf adds RateLimit-Policy and RateLimit to every response; the 503 has neither.
  it("carries the IETF fields with headers.ietf", async () => {
    const res = await request(`${gw.url}/v1/user`, { headers: { authorization: "Bearer valid-token" } });
    expect(res.headers["ratelimit-policy"]).toBeDefined();
    expect(res.headers["ratelimit"]).toBeDefined();
  });

  // GET /rate_limit answers its 503 with the anonymous class's headers for an authenticated caller.
  it("of GET /rate_limit names the caller's class", async () => {
    const res = await request(`${gw.url}/rate_limit`, { headers: { authorization: "Bearer valid-token" } });
    expectUnavailable(res, "read", "10");
  });
});
