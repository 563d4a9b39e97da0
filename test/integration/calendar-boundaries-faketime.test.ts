/**
 * SPEC §19 on real clocks: a real redis-server whose wall clock libfaketime sets a few seconds
 * before a month, a week and a day boundary (and a day boundary at +09:00), behind real gateways
 * with the Redis store. Before the boundary the calendar window's last unit is spent, the next call
 * gets the 429 whose `Retry-After` runs to the boundary (and further calls are answered by the
 * gateway's rejection cache until then); once Redis's clock has passed it, the call is admitted
 * with the next boundary as Reset. Two replicas sharing the calendar admit exactly the limit of
 * 300 concurrent calls in each period.
 */
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClockRedis } from "../helpers/faketime-redis.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { agent, closeServer, listen, request, type TestResponse } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";

/** How far before the boundary Redis's clock is set: room for a few calls on a loaded machine. */
const LEAD_MS = 3000;
const auth = { authorization: "Bearer valid-token" };
const keepAlive = agent();
let upstream: { server: Server; url: string };

beforeAll(async () => {
  upstream = await listen((_req, res) => res.end("ok"));
});

afterAll(async () => {
  keepAlive.destroy();
  await closeServer(upstream.server);
});

/** A gateway on `redis` whose class `read` has the given windows. */
function quotaGateway(redis: FakeClockRedis, prefix: string, offset: string, windows: unknown[]) {
  return startGateway(
    testConfig(upstream.url, {
      headers: { ietf: true },
      rate_limits: {
        // Generous: this is about clocks and exactness, and a timed-out call would fail open.
        store: { redis: { url: redis.url, key_prefix: prefix, command_timeout_ms: 2000 } },
        quota_utc_offset: offset,
        classes: { read: { windows } },
      },
    }),
  );
}

const call = (gw: TestGateway): Promise<TestResponse> =>
  request(`${gw.url}/v1/items`, { headers: auth, agent: keepAlive });

const header = (r: TestResponse, name: string): number => Number(r.headers[name]);

interface Boundary {
  name: string;
  period: "month" | "week" | "day";
  offset: string;
  /** The boundary (epoch ms) Redis's clock is set a few seconds before. */
  atMs: number;
  /** The boundary after it: the Reset of the first call of the new period. */
  nextMs: number;
}

const BOUNDARIES: Boundary[] = [
  {
    name: "month, Jan 31 to Feb 1",
    period: "month",
    offset: "+00:00",
    atMs: Date.UTC(2026, 1, 1),
    nextMs: Date.UTC(2026, 2, 1),
  },
  {
    name: "week, Sunday to Monday",
    period: "week",
    offset: "+00:00",
    atMs: Date.UTC(2026, 2, 2),
    nextMs: Date.UTC(2026, 2, 9),
  },
  {
    name: "day, Feb 27 to 28",
    period: "day",
    offset: "+00:00",
    atMs: Date.UTC(2026, 1, 28),
    nextMs: Date.UTC(2026, 2, 1),
  },
  {
    name: "day at +09:00, 15:00 UTC",
    period: "day",
    offset: "+09:00",
    atMs: Date.UTC(2026, 1, 10, 15),
    nextMs: Date.UTC(2026, 1, 11, 15),
  },
];

describe.concurrent("a calendar window across its boundary", () => {
  it.each(BOUNDARIES.map((b, i) => [b.name, b, i] as const))("%s", async (_name, b, i) => {
    const redis = await FakeClockRedis.start();
    const gw = await quotaGateway(redis, `cal${i}`, b.offset, [
      { limit: 100, window_s: 60 },
      { limit: 3, period: b.period },
    ]);
    try {
      await redis.setClock(b.atMs - LEAD_MS);
      const spent = [await call(gw), await call(gw), await call(gw)];
      expect(spent.map((r) => r.status)).toEqual([200, 200, 200]);
      // The calendar window has the fewest left: it is reported, its Reset the boundary.
      expect(spent.map((r) => header(r, "x-ratelimit-remaining"))).toEqual([2, 1, 0]);
      expect(spent.map((r) => header(r, "x-ratelimit-reset"))).toEqual(Array(3).fill(b.atMs / 1000));
      expect(spent[0]!.headers["ratelimit"]).toMatch(new RegExp(`^"read-${b.period}";r=2;t=[1-4]$`));

      const before = await redis.timeMs();
      const refused = await call(gw);
      const after = await redis.timeMs();
      expect(after, "the calls before the boundary took longer than the lead").toBeLessThan(b.atMs);
      expect(refused.status).toBe(429);
      expect(header(refused, "x-ratelimit-remaining")).toBe(0);
      expect(header(refused, "x-ratelimit-reset")).toBe(b.atMs / 1000);
      // Retry-After: the whole time to the boundary, rounded up, on Redis's clock.
      const retryAfter = header(refused, "retry-after");
      expect(retryAfter).toBeGreaterThanOrEqual(Math.ceil((b.atMs - after) / 1000));
      expect(retryAfter).toBeLessThanOrEqual(Math.ceil((b.atMs - before) / 1000));
      expect(refused.headers["ratelimit"]).toBe(`"read-${b.period}";r=0;t=${retryAfter}`);
      expect(JSON.parse(refused.body).error.message).toBe(
        `API rate limit exceeded. Please try again in ${retryAfter} seconds`,
      );
      // Over the limit, the replica answers locally until the boundary, as Redis would.
      const local = await scrape(gw.adminUrl);
      expect(local.value("gateway_ratelimit_local_rejections_total", { class: "read" })).toBeGreaterThan(0);

      await redis.until(b.atMs);
      const admitted = await call(gw);
      expect(admitted.status).toBe(200);
      expect(header(admitted, "x-ratelimit-remaining")).toBe(2);
      expect(header(admitted, "x-ratelimit-reset")).toBe(b.nextMs / 1000);
      expect(admitted.headers["ratelimit-policy"]).toBe(
        `"read-60s";q=100;w=60, "read-${b.period}";q=3;w=${(b.nextMs - b.atMs) / 1000}`,
      );
      const status = JSON.parse((await request(`${gw.url}/rate_limit`, { headers: auth })).body);
      expect(status.resources.read).toEqual({ limit: 3, remaining: 2, reset: b.nextMs / 1000, used: 1 });
      // The period's key expires when the period ends, on Redis's clock.
      const key = `cal${i}:{sub:alice}:read:${b.period}`;
      expect(await redis.client.hget(key, "s")).toBe(String(b.atMs));
      expect(Number(await redis.client.call("PEXPIRETIME", key))).toBe(b.nextMs);
    } finally {
      await gw.close();
      await redis.destroy();
    }
  });

  it("two replicas sharing one calendar admit exactly the limit of 300 concurrent calls, each period", async () => {
    const redis = await FakeClockRedis.start();
    const windows = [{ limit: 100, period: "day" }];
    const [a, b] = await Promise.all([
      quotaGateway(redis, "calpair", "+09:00", windows),
      quotaGateway(redis, "calpair", "+09:00", windows),
    ]);
    const atMs = Date.UTC(2026, 3, 30, 15); // May 1, 00:00 at +09:00
    const burst = () => Promise.all(Array.from({ length: 300 }, (_, i) => call(i % 2 === 0 ? a : b)));
    try {
      await redis.setClock(atMs - LEAD_MS);
      const first = await burst();
      expect(await redis.timeMs(), "the burst took longer than the lead").toBeLessThan(atMs);
      expect(first.filter((r) => r.status === 200)).toHaveLength(100);
      expect(first.filter((r) => r.status === 429)).toHaveLength(200);
      expect(new Set(first.map((r) => header(r, "x-ratelimit-reset")))).toEqual(new Set([atMs / 1000]));
      await redis.until(atMs);
      const second = await burst();
      expect(second.filter((r) => r.status === 200)).toHaveLength(100);
      expect(new Set(second.map((r) => header(r, "x-ratelimit-reset")))).toEqual(
        new Set([atMs / 1000 + 86_400]),
      );
      // Rejected calls were not counted.
      expect(await redis.client.hget("calpair:{sub:alice}:read:day", "c")).toBe("100");
    } finally {
      await Promise.all([a.close(), b.close()]);
      await redis.destroy();
    }
  });
});
