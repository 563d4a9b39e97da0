/**
 * SPEC §23: a decision counts the described call exactly once (in Redis: one EVALSHA, so at most the
 * limiter's one round trip per decision), writes one access line whose status is the decision
 * answer's and which adds `"mode":"decision"`, and moves the same request metrics as a proxied
 * call (`route` as configured, the class charged, the answer's code), while no upstream metric
 * moves. A real redis-server (its `INFO commandstats` counts the round trips).
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { captureLog } from "../helpers/access-lines.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { request } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";
import { RedisServer } from "../helpers/redis-server.js";

let redis: RedisServer;
let admin: Redis;
let gw: TestGateway;
const log = captureLog();

beforeAll(async () => {
  redis = await RedisServer.start();
  admin = new Redis(redis.port, "127.0.0.1", { lazyConnect: true });
  await admin.connect();
  gw = await startGateway(
    testConfig("http://127.0.0.1:1", {
      decision: { listen: { host: "127.0.0.1", port: 0 } },
      rate_limits: {
        store: { redis: { url: redis.url, key_prefix: "decision-once" } },
        classes: {
          read: { match: { methods: ["GET"] }, windows: [{ limit: 5, window_s: 60 }] },
          write: { match: { methods: ["POST"] }, windows: [{ limit: 50, window_s: 60 }] },
        },
        anonymous: { windows: [{ limit: 50, window_s: 60 }] },
      },
    }),
    { logger: log.logger },
  );
});

afterAll(async () => {
  await gw.close();
  admin.disconnect();
  await redis.stop();
});

/** Redis's count of script calls so far. */
async function evalCalls(): Promise<number> {
  const info = await admin.info("commandstats");
  let n = 0;
  for (const m of info.matchAll(/^cmdstat_(evalsha|eval|evalsha_ro|fcall):calls=(\d+)/gm)) n += Number(m[2]);
  return n;
}

function ask(method: string, target: string, token = "valid-token", id?: string) {
  const headers: Record<string, string> = { "x-original-method": method, "x-original-uri": target };
  if (token !== "") headers.authorization = `Bearer ${token}`;
  if (id !== undefined) headers["x-request-id"] = id;
  return request(`${gw.decisionUrl}/decide`, { headers });
}

describe("counted exactly once", () => {
  it("each decision spends one unit of the described class: 5 allowed, the 6th refused", async () => {
    const remaining: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await ask("GET", "/v1/user", "reader-token");
      expect(res.status).toBe(200);
      remaining.push(res.headers["x-ratelimit-remaining"] as string);
    }
    expect(remaining).toEqual(["4", "3", "2", "1", "0"]);
    expect((await ask("GET", "/v1/user", "reader-token")).status).toBe(429);
  });

  it("one limiter round trip (one EVALSHA) per decision, cached token", async () => {
    await ask("POST", "/v1/pages", "client-token"); // the token is cached from here on
    const before = await evalCalls();
    for (let i = 0; i < 4; i++) expect((await ask("POST", "/v1/pages", "client-token")).status).toBe(200);
    expect((await evalCalls()) - before).toBe(4);
  });
});

describe("access line", () => {
  it("one line per decision, the answer's status, mode decision, the described method and path", async () => {
    await ask("POST", "/v1/spaces/a/pages?x=1", "valid-token", "decision-line-1");
    await ask("GET", "/nowhere", "valid-token", "decision-line-2");
    const lines = log.accessLines(gw);
    const allowed = lines.filter((l) => l.reqId === "decision-line-1");
    const refused = lines.filter((l) => l.reqId === "decision-line-2");
    expect(allowed).toHaveLength(1);
    expect(allowed[0]).toMatchObject({
      mode: "decision",
      status: 200,
      method: "POST",
      path: "/v1/spaces/a/pages",
      route: "/v1",
      class: "write",
      identity: "alice",
      upstreamMs: null,
      endpoint: null,
      attempts: null,
    });
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({
      mode: "decision",
      status: 404,
      error: "not_found",
      class: "anonymous",
    });
  });

  it("the nginx-mode line has the status answered (403)", async () => {
    const res = await request(`${gw.decisionUrl}/decide?nginx=1`, {
      headers: {
        "x-original-method": "GET",
        "x-original-uri": "/nowhere",
        "x-request-id": "decision-line-3",
      },
    });
    expect(res.status).toBe(403);
    const line = log.accessLines(gw).find((l) => l.reqId === "decision-line-3");
    expect(line).toMatchObject({ status: 403, error: "not_found", mode: "decision" });
  });
});

describe("metrics", () => {
  it("the request series of a proxied call move, with route as configured; no upstream metric", async () => {
    const before = await scrape(gw.adminUrl);
    const series = { route: "/v1", class: "write", code: "200" };
    for (let i = 0; i < 3; i++) expect((await ask("POST", "/v1/pages")).status).toBe(200);
    const after = await scrape(gw.adminUrl);
    expect(
      after.value("gateway_requests_total", series) - before.value("gateway_requests_total", series),
    ).toBe(3);
    const decided = (s: typeof after) =>
      s.sum("gateway_ratelimit_decisions_total", { class: "write", outcome: "allowed" });
    expect(decided(after) - decided(before)).toBe(3);
    expect(after.sum("gateway_upstream_duration_seconds_count")).toBe(0);
    expect(after.sum("gateway_upstream_errors_total")).toBe(0);
    expect(after.value("gateway_inflight_requests")).toBe(0);
  });
});
