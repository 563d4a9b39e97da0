/**
 * SPEC §19: plans, consumers, identity kinds, shadow mode and failing open apply to calendar
 * windows as to sliding ones. Real gateways on an injected clock (the memory store's time, and the
 * failover's while Redis is down), the static tokens file (`valid-token`: sub alice, client web;
 * `reader-token`: sub bob, client web; `client-token`: client svc).
 */
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../gateway/base/clock.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request, type TestResponse } from "../helpers/http.js";
import { RedisServer } from "../helpers/redis-server.js";

/** 2026-05-31 20:00 UTC: at +05:00 it is June 1, 01:00; at +00:00 the month ends in 4 hours. */
const NOW = Date.UTC(2026, 4, 31, 20);
let upstream: { server: Server; url: string };

beforeAll(async () => {
  upstream = await listen((_req, res) => res.end("ok"));
});

afterAll(async () => {
  await closeServer(upstream.server);
});

const get = (gw: TestGateway, token: string, path = "/v1/items"): Promise<TestResponse> =>
  request(`${gw.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
const h = (r: TestResponse, name: string): string => String(r.headers[name]);

describe("on the memory store", () => {
  let gw: TestGateway;
  const clock = new ManualClock(NOW);

  beforeAll(async () => {
    gw = await startGateway(
      testConfig(upstream.url, {
        rate_limits: {
          quota_utc_offset: "+05:00",
          classes: {
            shared: {
              match: { paths: ["/v1/shared"] },
              identity: "client",
              windows: [{ limit: 3, period: "day" }],
            },
            trial: {
              match: { paths: ["/v1/trial"] },
              mode: "shadow",
              windows: [{ limit: 1, period: "week" }],
            },
            read: { windows: [{ limit: 2, period: "month" }] },
          },
          plans: { pro: { read: [{ limit: 5, period: "month" }] } },
          consumers: [{ sub: "bob", plan: "pro" }],
        },
      }),
      { clock },
    );
  });

  afterAll(async () => {
    await gw.close();
  });

  it("a plan's calendar window replaces the class's, and GET /rate_limit shows it with the next period's start", async () => {
    const july = Date.UTC(2026, 6, 1) - 5 * 3_600_000;
    // At +05:00 it is already June: the month started 1 hour ago and ends on July 1.
    const alice = [await get(gw, "valid-token"), await get(gw, "valid-token"), await get(gw, "valid-token")];
    expect(alice.map((r) => r.status)).toEqual([200, 200, 429]);
    expect(alice.map((r) => h(r, "x-ratelimit-limit"))).toEqual(["2", "2", "2"]);
    expect(new Set(alice.map((r) => h(r, "x-ratelimit-reset")))).toEqual(new Set([String(july / 1000)]));
    expect(h(alice[2]!, "retry-after")).toBe(String((july - NOW) / 1000)); // 30 days 23 hours
    const bob = await get(gw, "reader-token");
    expect([bob.status, h(bob, "x-ratelimit-limit"), h(bob, "x-ratelimit-remaining")]).toEqual([
      200,
      "5",
      "4",
    ]);
    const status = JSON.parse((await get(gw, "reader-token", "/rate_limit")).body);
    expect(status.plan).toBe("pro");
    expect(status.resources.read).toEqual({ limit: 5, remaining: 4, reset: july / 1000, used: 1 });
  });

  it("identity: client shares one calendar budget among the client's users, apart from other clients", async () => {
    const seen = [
      await get(gw, "valid-token", "/v1/shared"),
      await get(gw, "reader-token", "/v1/shared"),
      await get(gw, "valid-token", "/v1/shared"),
      await get(gw, "reader-token", "/v1/shared"),
      await get(gw, "client-token", "/v1/shared"),
    ];
    expect(seen.map((r) => [r.status, h(r, "x-ratelimit-remaining")])).toEqual([
      [200, "2"],
      [200, "1"],
      [200, "0"],
      [429, "0"],
      [200, "2"],
    ]);
  });

  it("shadow mode counts and reports a calendar window but proxies over it", async () => {
    const a = await get(gw, "valid-token", "/v1/trial");
    const b = await get(gw, "valid-token", "/v1/trial");
    expect([a.status, h(a, "x-ratelimit-remaining")]).toEqual([200, "0"]);
    expect([b.status, h(b, "x-ratelimit-remaining"), b.body]).toEqual([200, "0", "ok"]);
    // The week starts on Monday June 1 at +05:00; it ends on Monday June 8.
    expect(h(b, "x-ratelimit-reset")).toBe(String((Date.UTC(2026, 5, 8) - 5 * 3_600_000) / 1000));
  });
});

describe("failing open", () => {
  let redis: RedisServer;
  let gw: TestGateway;

  beforeAll(async () => {
    redis = await RedisServer.start();
    gw = await startGateway(
      testConfig(upstream.url, {
        rate_limits: {
          store: { redis: { url: redis.url, key_prefix: "calopen", command_timeout_ms: 500 } },
          failure_mode: "open",
          expected_replicas: 2,
          classes: { read: { windows: [{ limit: 5, period: "month" }] } },
        },
      }),
      { clock: new ManualClock(NOW) },
    );
  });

  afterAll(async () => {
    await gw.close();
    await redis.destroy();
  });

  it("answers from memory with ceil(limit / expected_replicas) per period, on the gateway's clock", async () => {
    await redis.stop();
    const seen = [
      await get(gw, "valid-token"),
      await get(gw, "valid-token"),
      await get(gw, "valid-token"),
      await get(gw, "valid-token"),
    ];
    expect(seen.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(seen.map((r) => h(r, "x-ratelimit-limit"))).toEqual(["3", "3", "3", "3"]);
    // The gateway's clock says May 31, 20:00 UTC: the month (at +00:00) ends in 4 hours.
    expect(h(seen[3]!, "x-ratelimit-reset")).toBe(String(Date.UTC(2026, 5, 1) / 1000));
    expect(h(seen[3]!, "retry-after")).toBe(String(4 * 3600));
  });
});
