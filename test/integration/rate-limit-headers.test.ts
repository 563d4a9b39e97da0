/**
 * SPEC §3-§4 through a running gateway: headers on every status, classes independent, the tighter
 * window reported, rejected calls not counted, exactness under concurrency, shadow mode, IETF
 * fields, the anonymous class and its brute-force guard, and GET /rate_limit.
 */
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../gateway/base/clock.js";
import { agent, closeServer, listen, request } from "../helpers/http.js";
import { TOKENS_FILE, startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";

let upstream: { server: Server; url: string };
const started: TestGateway[] = [];
const keepAlive = agent();

async function gateway(overrides: Record<string, unknown> = {}, clock?: ManualClock): Promise<TestGateway> {
  const gw = await startGateway(testConfig(upstream.url, overrides), { clock });
  started.push(gw);
  return gw;
}

const headersOf = (h: Record<string, unknown>) => ({
  limit: Number(h["x-ratelimit-limit"]),
  remaining: Number(h["x-ratelimit-remaining"]),
  reset: Number(h["x-ratelimit-reset"]),
  resource: h["x-ratelimit-resource"],
});

beforeAll(async () => {
  upstream = await listen((req, res) => {
    const status = Number(new URL(req.url ?? "/", "http://x").searchParams.get("status") ?? 200);
    res.writeHead(status, {
      "content-type": "text/plain",
      "x-upstream": "yes",
      "x-ratelimit-limit": "999999",
      "x-ratelimit-remaining": "999999",
    });
    res.end(`upstream said ${status}`);
  });
});

afterAll(async () => {
  await Promise.all(started.map((g) => g.close()));
  keepAlive.destroy();
  await closeServer(upstream.server);
});

describe("rate-limit headers on every response", () => {
  it.each([200, 201, 404, 418, 500, 503])(
    "upstream %i passes through untouched, gateway headers override",
    async (status) => {
      const gw = await gateway();
      const res = await request(`${gw.url}/v1/thing?status=${status}`, {
        headers: { authorization: "Bearer valid-token" },
      });
      expect(res.status).toBe(status);
      expect(res.body).toBe(`upstream said ${status}`);
      expect(res.headers["x-upstream"]).toBe("yes");
      expect(headersOf(res.headers)).toMatchObject({ limit: 100, remaining: 99, resource: "read" });
    },
  );

  it("counts classes independently", async () => {
    const gw = await gateway();
    const h = { authorization: "Bearer valid-token" };
    await request(`${gw.url}/v1/pages`, { method: "POST", headers: h });
    await request(`${gw.url}/v1/pages`, { method: "POST", headers: h });
    const read = await request(`${gw.url}/v1/user`, { headers: h });
    const search = await request(`${gw.url}/v1/search?q=x`, { headers: h });
    const write = await request(`${gw.url}/v1/pages`, { method: "POST", headers: h });
    expect(headersOf(read.headers)).toMatchObject({ resource: "read", remaining: 99 });
    expect(headersOf(search.headers)).toMatchObject({ resource: "search", remaining: 4, limit: 5 });
    expect(headersOf(write.headers)).toMatchObject({ resource: "write", remaining: 0, limit: 3 });
  });

  it("reports the window closest to exhaustion of a multi-window class", async () => {
    const gw = await gateway({
      rate_limits: {
        classes: {
          write: {
            algorithm: "sliding_log",
            windows: [
              { limit: 1000, window_s: 3600 },
              { limit: 2, window_s: 10 },
            ],
          },
        },
      },
    });
    const h = { authorization: "Bearer valid-token" };
    const first = await request(`${gw.url}/v1/x`, { headers: h });
    expect(headersOf(first.headers)).toMatchObject({ limit: 2, remaining: 1 });
    await request(`${gw.url}/v1/x`, { headers: h });
    const third = await request(`${gw.url}/v1/x`, { headers: h });
    expect(third.status).toBe(429);
    expect(headersOf(third.headers)).toMatchObject({ limit: 2, remaining: 0 });
  });

  it("does not count rejected calls: capacity returns exactly at Reset", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 0, 0, 3, 250));
    const gw = await gateway({}, clock);
    const h = { authorization: "Bearer valid-token" };
    const post = () => request(`${gw.url}/v1/pages`, { method: "POST", headers: h });
    for (let i = 0; i < 3; i++) expect((await post()).status).toBe(200);
    let rejected = await post();
    for (let i = 0; i < 20; i++) rejected = await post();
    expect(rejected.status).toBe(429);
    const reset = Number(rejected.headers["x-ratelimit-reset"]);
    const retryAfter = Number(rejected.headers["retry-after"]);
    expect(retryAfter).toBe(Math.ceil(reset - clock.nowMs() / 1000));
    // Window [0 s, 10 s), 3 calls at 3.25 s: the estimate 3 * (1 - (t - 10)/10) reaches 2 at 13.33 s,
    // so Reset is 14 and one second earlier the call is still over. Had the 21 rejected calls been
    // counted, the estimate at 14 s would be 14.4.
    expect(reset).toBe(Date.UTC(2026, 0, 1, 0, 0, 14) / 1000);
    clock.set(reset * 1000 - 1000);
    expect((await post()).status).toBe(429);
    clock.set(reset * 1000);
    const admitted = await post();
    expect(admitted.status).toBe(200);
  });

  it("sliding_log admits exactly the limit out of 500 concurrent calls", async () => {
    const gw = await gateway({
      rate_limits: {
        classes: { read: { algorithm: "sliding_log", windows: [{ limit: 100, window_s: 60 }] } },
      },
    });
    const results = await Promise.all(
      Array.from({ length: 500 }, () =>
        request(`${gw.url}/v1/user`, { headers: { authorization: "Bearer valid-token" }, agent: keepAlive }),
      ),
    );
    const ok = results.filter((r) => r.status === 200).length;
    expect(ok).toBe(100);
    expect(results.filter((r) => r.status === 429).length).toBe(400);
    const remainings = results
      .filter((r) => r.status === 200)
      .map((r) => Number(r.headers["x-ratelimit-remaining"]));
    expect(new Set(remainings).size).toBe(100);
  });

  it("shadow mode proxies over-limit calls and counts them as shadow_limited", async () => {
    const gw = await gateway({
      rate_limits: { classes: { read: { mode: "shadow", windows: [{ limit: 1, window_s: 60 }] } } },
    });
    const h = { authorization: "Bearer valid-token" };
    await request(`${gw.url}/v1/user`, { headers: h });
    const over = await request(`${gw.url}/v1/user`, { headers: h });
    expect(over.status).toBe(200);
    expect(over.headers["x-ratelimit-remaining"]).toBe("0");
    const metrics = await request(`${gw.adminUrl}/metrics`);
    expect(metrics.body).toContain(
      'gateway_ratelimit_decisions_total{class="read",plan="none",outcome="shadow_limited",window="60s"} 1',
    );
  });

  it("adds the IETF RateLimit-Policy and RateLimit fields, t equal to Retry-After on a 429", async () => {
    const gw = await gateway({ headers: { ietf: true } });
    const h = { authorization: "Bearer valid-token" };
    const ok = await request(`${gw.url}/v1/user`, { headers: h });
    expect(ok.headers["ratelimit-policy"]).toBe('"read";q=100;w=3600');
    expect(ok.headers["ratelimit"]).toMatch(/^"read";r=99;t=\d+$/);
    let last = ok;
    for (let i = 0; i < 4; i++) last = await request(`${gw.url}/v1/p`, { method: "POST", headers: h });
    expect(last.status).toBe(429);
    expect(last.headers["ratelimit-policy"]).toBe('"write-10s";q=3;w=10, "write-3600s";q=50;w=3600');
    expect(last.headers["ratelimit"]).toBe(`"write-10s";r=0;t=${last.headers["retry-after"]}`);
  });
});

describe("anonymous class", () => {
  it("limits failed authentications by client IP and then stops introspecting unknown tokens", async () => {
    const gw = await gateway({
      rate_limits: {
        classes: { read: { windows: [{ limit: 100, window_s: 60 }] } },
        anonymous: { windows: [{ limit: 3, window_s: 60 }] },
      },
    });
    const valid = await request(`${gw.url}/v1/user`, { headers: { authorization: "Bearer valid-token" } });
    expect(valid.status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await request(`${gw.url}/v1/user`, { headers: { authorization: `Bearer guess-${i}` } });
      statuses.push(r.status);
      expect(r.headers["x-ratelimit-resource"]).toBe("anonymous");
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429, 429]);
    const metrics = (await request(`${gw.adminUrl}/metrics`)).body;
    // valid-token + 3 guesses reached the source; the last 3 guesses did not.
    expect(metrics).toContain('gateway_token_cache_lookups_total{result="miss"} 4');
    const stillValid = await request(`${gw.url}/v1/user`, {
      headers: { authorization: "Bearer valid-token" },
    });
    expect(stillValid.status).toBe(200);
    expect(stillValid.headers["x-ratelimit-resource"]).toBe("read");
  });

  it("re-validates a known valid token whose cache entry went stale, even with the budget spent", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const gw = await gateway(
      {
        auth: { static: { tokens_file: TOKENS_FILE, cache: { max_ttl_s: 30 } } },
        rate_limits: {
          classes: { read: { windows: [{ limit: 100, window_s: 3600 }] } },
          anonymous: { windows: [{ limit: 2, window_s: 3600 }] },
        },
      },
      clock,
    );
    const h = { authorization: "Bearer valid-token" };
    expect((await request(`${gw.url}/v1/user`, { headers: h })).status).toBe(200);
    for (let i = 0; i < 3; i++)
      await request(`${gw.url}/v1/user`, { headers: { authorization: `Bearer guess-${i}` } });
    expect(
      (await request(`${gw.url}/v1/user`, { headers: { authorization: "Bearer new-guess" } })).status,
    ).toBe(429);
    clock.advance(31_000); // past max_ttl_s: the entry is stale and must be introspected again
    const res = await request(`${gw.url}/v1/user`, { headers: h });
    expect(res.status).toBe(200);
    expect(res.headers["x-ratelimit-resource"]).toBe("read");
  });

  it("keys by the X-Forwarded-For entry trust_proxy selects", async () => {
    const gw = await gateway({
      trust_proxy: 1,
      rate_limits: {
        classes: { read: { windows: [{ limit: 9, window_s: 60 }] } },
        anonymous: { windows: [{ limit: 1, window_s: 60 }] },
      },
    });
    const a1 = await request(`${gw.url}/v1/user`, { headers: { "x-forwarded-for": "203.0.113.1" } });
    const a2 = await request(`${gw.url}/v1/user`, { headers: { "x-forwarded-for": "203.0.113.1" } });
    const b1 = await request(`${gw.url}/v1/user`, { headers: { "x-forwarded-for": "198.51.100.7" } });
    expect([a1.status, a2.status, b1.status]).toEqual([401, 429, 401]);
  });
});

describe("GET /rate_limit", () => {
  it("reports every class without counting", async () => {
    const gw = await gateway();
    const h = { authorization: "Bearer valid-token" };
    await request(`${gw.url}/v1/p`, { method: "POST", headers: h });
    const first = await request(`${gw.url}/rate_limit`, { headers: h });
    const second = await request(`${gw.url}/rate_limit`, { headers: h });
    expect(first.status).toBe(200);
    expect(second.headers["content-type"]).toBe("application/json; charset=utf-8");
    const body = JSON.parse(second.body) as {
      resources: Record<string, { limit: number; remaining: number; used: number; reset: number }>;
    };
    expect(body.resources.write).toMatchObject({ limit: 3, remaining: 2, used: 1 });
    expect(body.resources.read).toMatchObject({ limit: 100, remaining: 100, used: 0 });
    expect(body.resources.search).toMatchObject({ limit: 5, remaining: 5, used: 0 });
    // reset: epoch seconds, no earlier than now (the untouched classes report the current second)
    for (const r of Object.values(body.resources))
      expect(r.reset).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) - 1);
    expect(second.headers["x-ratelimit-resource"]).toBe("read");
    expect(second.headers["x-ratelimit-remaining"]).toBe("100");
    expect((await request(`${gw.url}/rate_limit`)).status).toBe(401);
  });
});
