/**
 * Budgets shared by an organisation and calls that cost more than one (SPEC §22), end to end: a
 * real Redis, two gateway replicas sharing it, tokens from a static file carrying an `org_id`
 * claim (a string for acme, a number for org 42).
 *
 * - concurrent calls from the three users of one organisation, spread over both replicas, admit
 *   exactly the organisation's budget, each user within their own windows; the refusals say which
 *   level bound (`RateLimit-Policy` naming `"read-org_id"`, `limited_by` in the access line);
 * - a user of another organisation and a token without the claim are not refused by it;
 * - `GET /rate_limit` lists, per class, the budgets the caller belongs to;
 * - an answer's charge is counted in Redis before its head goes out, and the other replica sees it;
 * - a class of `cost` 5 spends 5 units a call: Remaining counts units, and a call refused for lack
 *   of units reports what is left (more than 0);
 * - a refused caller answered locally (the rejection cache) never refuses another user of the
 *   same organisation who still has room, and never admits past the organisation's budget.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { createLogger } from "../../gateway/observability/logger.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { agent, closeServer, listen, request, type TestResponse } from "../helpers/http.js";
import { logLines } from "../helpers/log-lines.js";
import { RedisServer } from "../helpers/redis-server.js";

/** Each user's own reads, and the organisation's (fewer than its three users' together). */
const OWN = 20;
const ORG = 25;
let upstream: Awaited<ReturnType<typeof listen>>;
let redis: RedisServer;
let dir: string;
let a: TestGateway;
let b: TestGateway;
const logs = logLines();
const keepAlive = agent();

const TOKENS = {
  "ann-token": { sub: "ann", scope: "read", org_id: "acme" },
  "ben-token": { sub: "ben", scope: "read", org_id: "acme" },
  "cat-token": { sub: "cat", scope: "read", org_id: "acme" },
  "dan-token": { sub: "dan", scope: "read", org_id: 42 },
  "eve-token": { sub: "eve", scope: "read" },
  "fay-token": { sub: "fay", scope: "read", org_id: "searchers" },
  "gus-token": { sub: "gus", scope: "read", org_id: "cachers" },
  "hal-token": { sub: "hal", scope: "read", org_id: "cachers" },
};

function config(): Record<string, unknown> {
  return testConfig(upstream.url, {
    auth: { realm: "api", static: { tokens_file: path.join(dir, "tokens.yaml") } },
    rate_limits: {
      store: { redis: { url: redis.url, key_prefix: "orgs", command_timeout_ms: 5000 } },
      classes: {
        search: {
          match: { paths: ["/v1/search"] },
          windows: [{ limit: 12, window_s: 3600 }],
          cost: 5,
        },
        export: {
          match: { paths: ["/v1/export"] },
          windows: [{ limit: 100, window_s: 3600 }],
          budgets: [{ key: "claim:org_id", windows: [{ limit: 1000, period: "day" }] }],
          charge: { header: "X-Usage-Units", max: 500 },
        },
        cached: {
          match: { paths: ["/v1/cached"] },
          algorithm: "sliding_log",
          windows: [{ limit: 10, window_s: 3600 }],
          budgets: [{ key: "claim:org_id", windows: [{ limit: 3, window_s: 3600 }] }],
        },
        read: {
          match: { methods: ["GET"] },
          windows: [{ limit: OWN, window_s: 3600 }],
          budgets: [{ key: "claim:org_id", windows: [{ limit: ORG, window_s: 3600 }] }],
        },
      },
      anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
    },
    headers: { ietf: true },
  });
}

beforeAll(async () => {
  upstream = await listen((req, res) => {
    const units = new URL(req.url!, "http://x").searchParams.get("units");
    if (units !== null) res.setHeader("X-Usage-Units", units);
    res.end("ok");
  });
  redis = await RedisServer.start();
  dir = mkdtempSync(path.join(tmpdir(), "gw-orgs-"));
  writeFileSync(path.join(dir, "tokens.yaml"), stringify(TOKENS));
  [a, b] = await Promise.all([
    startGateway(config(), { logger: createLogger("info", logs.destination) }),
    startGateway(config()),
  ]);
});

afterAll(async () => {
  keepAlive.destroy();
  await Promise.all([a?.close(), b?.close()]);
  await Promise.all([closeServer(upstream.server), redis?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

const call = (gw: TestGateway, token: string, p = "/v1/items"): Promise<TestResponse> =>
  request(`${gw.url}${p}`, { headers: { authorization: `Bearer ${token}` }, agent: keepAlive });

describe("an organisation's budget over two replicas on one Redis", () => {
  it("admits exactly the organisation's budget to concurrent calls of its three users", async () => {
    const users = ["ann-token", "ben-token", "cat-token"];
    // Each user sends their own limit's worth: 60 calls for a budget of 25, all at once.
    const calls = users.flatMap((t, u) =>
      Array.from({ length: OWN }, (_, i) => call((i + u) % 2 === 0 ? a : b, t)),
    );
    const rs = await Promise.all(calls);
    const admitted = rs.filter((r) => r.status === 200);
    expect(admitted).toHaveLength(ORG);
    const refused = rs.filter((r) => r.status === 429);
    expect(refused).toHaveLength(3 * OWN - ORG);
    for (const r of refused) {
      // The organisation's window bound: its limit, its name in the IETF fields.
      expect(r.headers["x-ratelimit-limit"]).toBe(String(ORG));
      expect(r.headers["x-ratelimit-remaining"]).toBe("0");
      expect(r.headers["ratelimit"]).toMatch(/^"read-org_id";r=0;t=\d+$/);
      expect(r.headers["ratelimit-policy"]).toBe('"read";q=20;w=3600, "read-org_id";q=25;w=3600');
    }
    const line = await logs.waitFor((l) => l.status === 429 && l.class === "read");
    expect(line).toMatchObject({ limited_by: "claim:org_id" });
    const ok = await logs.waitFor((l) => l.status === 200 && l.class === "read");
    expect(ok.limited_by).toBeUndefined();
  });

  it("another organisation (a numeric claim) and a token without the claim are not refused by it", async () => {
    const dan = await call(a, "dan-token");
    expect(dan.status).toBe(200);
    // 19 of 20 left in dan's own window, 24 of 25 in org 42's: the own window is reported.
    expect(dan.headers["x-ratelimit-remaining"]).toBe(String(OWN - 1));
    const eve = await call(b, "eve-token");
    expect(eve.status).toBe(200);
    expect(eve.headers["x-ratelimit-limit"]).toBe(String(OWN));
    // Without the claim, the call counts in the caller's own windows only.
    expect(eve.headers["ratelimit-policy"]).toBe('"read";q=20;w=3600');
    // The exhausted organisation's users are still refused, on either replica.
    expect((await call(b, "ann-token")).status).toBe(429);
  });

  it("GET /rate_limit reports each budget the caller belongs to, with its claim value", async () => {
    const status = async (gw: TestGateway, token: string) => {
      const r = await call(gw, token, "/rate_limit");
      expect(r.status).toBe(200);
      return (JSON.parse(r.body) as { resources: Record<string, { budgets?: unknown[] }> }).resources;
    };
    const ann = await status(b, "ann-token");
    expect(ann.read!.budgets).toEqual([
      { key: "claim:org_id", value: "acme", limit: ORG, remaining: 0, reset: expect.any(Number), used: ORG },
    ]);
    // A class without budgets has none; a numeric claim is reported as text.
    expect(ann.search!.budgets).toBeUndefined();
    const dan = await status(a, "dan-token");
    expect(dan.read!.budgets).toEqual([
      {
        key: "claim:org_id",
        value: "42",
        limit: ORG,
        remaining: ORG - 1,
        reset: expect.any(Number),
        used: 1,
      },
    ]);
    // Without the claim, the caller belongs to no budget.
    expect((await status(a, "eve-token")).read!.budgets).toEqual([]);
  });

  it("a call of cost 5 spends 5 units; a refusal for lack of units reports the units left", async () => {
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await call(i % 2 === 0 ? a : b, "fay-token", "/v1/search");
      seen.push(`${r.status} ${String(r.headers["x-ratelimit-remaining"])}`);
    }
    expect(seen).toEqual(["200 7", "200 2", "429 2"]);
    const line = await logs.waitFor((l) => l.status === 429 && l.class === "search");
    expect(line).toMatchObject({ limited_by: "identity", remaining: 2 });
  });

  it("a caller refused by the organisation is answered locally without refusing a colleague with room", async () => {
    // cachers: 3 calls a budget; gus spends them all, then is refused (and remembered) on a.
    for (let i = 0; i < 3; i++) expect((await call(a, "gus-token", "/v1/cached")).status).toBe(200);
    const gusRefused = await call(a, "gus-token", "/v1/cached");
    expect(gusRefused.status).toBe(429);
    expect((await call(a, "gus-token", "/v1/cached")).status).toBe(429);
    // hal has all of their own budget left but none of the organisation's: refused by the store,
    // not by gus's entry, and never admitted past the organisation's budget.
    const hal = await call(a, "hal-token", "/v1/cached");
    expect(hal.status).toBe(429);
    expect(hal.headers["x-ratelimit-limit"]).toBe("3");
    // A colleague's own window untouched: a different class of the same organisation still admits.
    expect((await call(a, "hal-token")).status).toBe(200);
  });

  it("an answer's charge is counted in Redis before its head is relayed, seen by the other replica", async () => {
    const charged = await call(a, "fay-token", "/v1/export?units=60");
    expect(charged.status).toBe(200);
    expect(charged.headers["x-usage-units"]).toBeUndefined();
    // 1 for the call, 60 charged: the caller's own window is the closest to exhaustion.
    expect(charged.headers["x-ratelimit-remaining"]).toBe(String(100 - 1 - 60));
    // The other replica reads the same counters: past the limit after a charge of 45 more...
    const past = await call(b, "fay-token", "/v1/export?units=45");
    expect(past.status).toBe(200);
    expect(past.headers["x-ratelimit-remaining"]).toBe("0");
    // ...so the next call, on either replica, is refused until the window frees.
    expect((await call(a, "fay-token", "/v1/export")).status).toBe(429);
  });
});
