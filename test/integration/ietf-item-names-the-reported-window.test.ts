/**
 * The IETF `RateLimit` item names the window the decision reports, taken from the
 * decision's window index rather than guessed from its limit: right while failing open (limits
 * divided by `expected_replicas`, so no configured limit matches) and when two windows of a class
 * have the same limit.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { REFUSED_PORT, closeServer, listen, request } from "../helpers/http.js";

let upstream: Awaited<ReturnType<typeof listen>>;
let gw: TestGateway;
const AUTH = { authorization: "Bearer valid-token" };

beforeAll(async () => {
  upstream = await listen((_req, res) => res.end("ok"));
  // Nothing listens on this port: every limiter call fails and the gateway fails open.
  const deadRedis = `redis://127.0.0.1:${REFUSED_PORT}`;
  gw = await startGateway(
    testConfig(upstream.url, {
      headers: { ietf: true },
      rate_limits: {
        store: { redis: { url: deadRedis, command_timeout_ms: 50 } },
        failure_mode: "open",
        expected_replicas: 2,
        classes: {
          // Failing open: 100/1 s → 50, 4/3600 s → 2; the hour window is the one closest to exhaustion.
          write: {
            match: { methods: ["POST"] },
            windows: [
              { limit: 100, window_s: 1 },
              { limit: 4, window_s: 3600 },
            ],
          },
          // Equal limits: after one call both have as many left; the later reset (3600 s) is
          // reported. (With 60 s, a call in the last second of a minute saw both windows reset
          // together, a tie the first window wins: seen once in npm test.)
          read: {
            match: { methods: ["GET"] },
            windows: [
              { limit: 5, window_s: 1 },
              { limit: 5, window_s: 3600 },
            ],
          },
        },
      },
    }),
  );
});

afterAll(async () => {
  await gw?.close();
  await closeServer(upstream.server);
});

describe("the RateLimit item", () => {
  it("names the reported window while failing open with divided limits", async () => {
    const res = await request(`${gw.url}/v1/x`, { method: "POST", headers: AUTH });
    expect(res.status).toBe(200);
    expect(res.headers["x-ratelimit-limit"]).toBe("2");
    const item = /^"write-3600s";r=1;t=(\d+)$/.exec(String(res.headers["ratelimit"]));
    expect(item, String(res.headers["ratelimit"])).not.toBeNull();
    // t is Retry-After for that window: Reset - now, give or take the second the request took.
    expect(Math.abs(Number(item![1]) - retryAfter(res.headers["x-ratelimit-reset"]))).toBeLessThanOrEqual(1);
    expect(res.headers["ratelimit-policy"]).toBe(`"write-1s";q=100;w=1, "write-3600s";q=4;w=3600`);
  });

  it("names the reported window when two windows have the same limit", async () => {
    const res = await request(`${gw.url}/v1/x`, { headers: AUTH });
    expect(res.status).toBe(200);
    // 5 per window divided by 2 replicas is 3 each; one used leaves 2 in both.
    expect(res.headers["x-ratelimit-remaining"]).toBe("2");
    expect(String(res.headers["ratelimit"])).toMatch(/^"read-3600s";r=2;t=\d+$/);
  });
});

/** `t` of the item: seconds until Reset, as the header computes it (at least 1). */
function retryAfter(reset: string | string[] | undefined): number {
  return Math.max(1, Math.ceil(Number(reset) - Date.now() / 1000));
}
