/**
 * Plans and consumers end to end (SPEC §10): a real RFC 7662 server
 * (oidc-provider, whose introspection responses carry a `plan` member and a `sub`), a real Redis
 * and two gateway replicas sharing it.
 *
 * - a `pro` and a `free` caller on one class see their own limits (headers, `RateLimit-Policy`,
 *   `GET /rate_limit`, the access line, the decisions metric) and get 429 at their own counts;
 * - two users of one OAuth client share a `client` class budget exactly: 300 concurrent calls
 *   over both replicas, limit 100, exactly 100 admitted;
 * - a SIGHUP moving a consumer to another plan keeps its count, for a token both replicas have
 *   cached (no new introspection);
 * - a plan claim naming no configured plan falls back to `default_plan` and is counted;
 * - with plans and 1000 consumers configured, a warm request is still one EVALSHA and nothing else.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { createLogger } from "../../gateway/observability/logger.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { agent, closeServer, listen, request, type TestResponse } from "../helpers/http.js";
import { introspectionAuthConfig, startAuthServer, type AuthServer } from "../helpers/oidc.js";
import { scrape } from "../helpers/prom.js";
import { cli, RedisServer, waitFor } from "../helpers/redis-server.js";

const FREE_READS = 3;
const PRO_READS = 6;
const BULK = 100;
let upstream: Awaited<ReturnType<typeof listen>>;
let auth: AuthServer;
let redis: RedisServer;
let dir: string;
let file: string;
let a: TestGateway;
let b: TestGateway;
const accessLines: Record<string, unknown>[] = [];
const keepAlive = agent();

/** The gateways' configuration; `mover` is the sub whose consumers entry a reload changes. */
function config(moverPlan: string): Record<string, unknown> {
  const many = Array.from({ length: 1000 }, (_, i) => ({ sub: `listed-${i}`, plan: "pro" }));
  return testConfig(upstream.url, {
    auth: introspectionAuthConfig(auth, { max_ttl_s: 600 }),
    rate_limits: {
      store: { redis: { url: redis.url, key_prefix: "plans", command_timeout_ms: 5000 } },
      classes: {
        bulk: {
          match: { paths: ["/v1/bulk"] },
          identity: "client",
          windows: [{ limit: BULK, window_s: 3600 }],
        },
        read: { match: { methods: ["GET"] }, windows: [{ limit: FREE_READS, window_s: 3600 }] },
      },
      anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
      plan_claim: "plan",
      default_plan: "free",
      plans: { free: {}, pro: { read: [{ limit: PRO_READS, window_s: 3600 }] } },
      consumers: [{ sub: "mover", plan: moverPlan }, ...many],
    },
    headers: { ietf: true },
  });
}

beforeAll(async () => {
  upstream = await listen((_req, res) => res.end("ok"));
  [auth, redis] = await Promise.all([startAuthServer(), RedisServer.start()]);
  dir = mkdtempSync(path.join(tmpdir(), "gw-plans-"));
  file = path.join(dir, "gateway.yaml");
  writeFileSync(file, stringify(config("free")));
  const lines = {
    write: (s: string) =>
      accessLines.push(
        ...s
          .trimEnd()
          .split("\n")
          .map((l) => JSON.parse(l)),
      ),
  };
  [a, b] = await Promise.all([
    startGateway(config("free"), { logger: createLogger("info", lines) }),
    startGateway(config("free")),
  ]);
});

afterAll(async () => {
  keepAlive.destroy();
  await Promise.all([a?.close(), b?.close()]);
  await Promise.all([closeServer(upstream.server), auth?.stop(), redis?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

const call = (gw: TestGateway, token: string, p = "/v1/items"): Promise<TestResponse> =>
  request(`${gw.url}${p}`, { headers: { authorization: `Bearer ${token}` }, agent: keepAlive });

/** `status limit remaining` of each response. */
const seen = (rs: TestResponse[]) =>
  rs.map(
    (r) =>
      `${r.status} ${String(r.headers["x-ratelimit-limit"])} ${String(r.headers["x-ratelimit-remaining"])}`,
  );

/** Calls alternate between the replicas, one at a time. */
async function alternate(token: string, n: number): Promise<TestResponse[]> {
  const out: TestResponse[] = [];
  for (let i = 0; i < n; i++) out.push(await call(i % 2 === 0 ? a : b, token));
  return out;
}

async function status(gw: TestGateway, token: string) {
  const r = await call(gw, token, "/rate_limit");
  expect(r.status).toBe(200);
  return JSON.parse(r.body) as {
    plan: string | null;
    resources: Record<string, { limit: number; used: number }>;
  };
}

const sumBoth = async (name: string, labels: Record<string, string> = {}) =>
  (await scrape(a.adminUrl)).sum(name, labels) + (await scrape(b.adminUrl)).sum(name, labels);

describe("plans over two replicas on one Redis, tokens from a real introspection server", () => {
  it("a pro and a free caller on one class see their own limits and get 429 at their own counts", async () => {
    const pro = await auth.issueToken("read", { sub: "pat", plan: "pro" });
    const free = await auth.issueToken("read", { sub: "fay", plan: "free" });
    const [proSeen, freeSeen] = await Promise.all([
      alternate(pro, PRO_READS + 1),
      alternate(free, FREE_READS + 1),
    ]);
    expect(seen(proSeen)).toEqual([
      "200 6 5",
      "200 6 4",
      "200 6 3",
      "200 6 2",
      "200 6 1",
      "200 6 0",
      "429 6 0",
    ]);
    expect(seen(freeSeen)).toEqual(["200 3 2", "200 3 1", "200 3 0", "429 3 0"]);
    expect(proSeen[0]!.headers["ratelimit-policy"]).toBe('"read";q=6;w=3600');
    expect(freeSeen[0]!.headers["ratelimit-policy"]).toBe('"read";q=3;w=3600');

    const proStatus = await status(b, pro);
    expect(proStatus.plan).toBe("pro");
    expect(proStatus.resources.read).toMatchObject({ limit: PRO_READS, used: PRO_READS });
    expect(proStatus.resources.bulk).toMatchObject({ limit: BULK, used: 0 });
    expect((await status(a, free)).plan).toBe("free");

    expect(
      await sumBoth("gateway_ratelimit_decisions_total", { class: "read", plan: "pro", outcome: "allowed" }),
    ).toBe(PRO_READS);
    expect(
      await sumBoth("gateway_ratelimit_decisions_total", { class: "read", plan: "pro", outcome: "limited" }),
    ).toBe(1);
    expect(
      await sumBoth("gateway_ratelimit_decisions_total", { class: "read", plan: "free", outcome: "limited" }),
    ).toBe(1);
    // Access lines reach the log within a second (they are handed over in chunks).
    const pats = () => accessLines.filter((l) => l.identity === "pat");
    await waitFor("pat's access lines", async () => pats().length === 4, 5000);
    expect(pats().map((l) => `${String(l.class)} ${String(l.plan)} ${String(l.status)}`)).toEqual([
      "read pro 200",
      "read pro 200",
      "read pro 200",
      "read pro 429",
    ]);
  });

  it("two users of one client share a `client` class budget exactly: 300 concurrent calls, 100 admitted", async () => {
    const users = await Promise.all(["u1", "u2"].map((sub) => auth.issueToken("read", { sub, plan: "pro" })));
    // Warm both replicas' token caches, then count only the burst.
    for (const gw of [a, b]) for (const t of users) expect((await call(gw, t)).status).toBe(200);
    const burst = await Promise.all(
      Array.from({ length: 300 }, (_, i) => call(i % 2 === 0 ? a : b, users[(i >> 1) % 2]!, "/v1/bulk")),
    );
    const statuses = burst.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(BULK);
    expect(statuses.filter((s) => s === 429)).toHaveLength(300 - BULK);
    expect(await sumBoth("gateway_ratelimit_decisions_total", { outcome: "degraded" })).toBe(0);
    // One budget, the client's; each user's `read` (per subject) budget is their own.
    const keys = (await cli(redis.port, "--scan", "--pattern", "plans:*:bulk:*")).split("\n");
    expect(keys).toEqual(["plans:{client:app}:bulk:3600"]);
    expect((await status(a, users[0]!)).resources.read!.used).toBe(2);
  });

  it("a SIGHUP moving a consumer to another plan keeps its count, for tokens already cached", async () => {
    // `mover` has a pro claim, but its consumers entry (checked first) says free.
    const mover = await auth.issueToken("read", { sub: "mover", plan: "pro" });
    expect(seen(await alternate(mover, 2))).toEqual(["200 3 2", "200 3 1"]);
    const introspections = auth.introspections();

    writeFileSync(file, stringify(config("pro")));
    expect(await Promise.all([a.gateway.reload(file), b.gateway.reload(file)])).toEqual([true, true]);
    // 2 spent; now measured against pro's 6.
    expect(seen(await alternate(mover, 2))).toEqual(["200 6 3", "200 6 2"]);
    expect((await status(b, mover)).plan).toBe("pro");

    writeFileSync(file, stringify(config("free")));
    expect(await Promise.all([a.gateway.reload(file), b.gateway.reload(file)])).toEqual([true, true]);
    // 4 spent, free allows 3: over the limit at once.
    expect(seen(await alternate(mover, 1))).toEqual(["429 3 0"]);
    expect(auth.introspections()).toBe(introspections);
  });

  it("a plan claim naming no configured plan falls back to default_plan and is counted", async () => {
    const before = await sumBoth("gateway_plan_claim_unknown_total");
    const gold = await auth.issueToken("read", { sub: "gil", plan: "gold" });
    const seven = await auth.issueToken("read", { sub: "sev", plan: 7 });
    expect(seen(await alternate(gold, 2))).toEqual(["200 3 2", "200 3 1"]);
    expect(seen([await call(b, seven)])).toEqual(["200 3 2"]);
    expect((await status(a, gold)).plan).toBe("free");
    // One per request whose claim was unusable: 2 + 1 calls and the /rate_limit read.
    expect((await sumBoth("gateway_plan_claim_unknown_total")) - before).toBe(4);
    // No claim at all is not "unknown".
    const none = await auth.issueToken("read", { sub: "nia" });
    expect(seen([await call(a, none)])).toEqual(["200 3 2"]);
    expect((await sumBoth("gateway_plan_claim_unknown_total")) - before).toBe(4);
  });

  it("with plans and 1000 consumers, a warm request is exactly one EVALSHA and nothing else", async () => {
    const token = await auth.issueToken("read", { sub: "listed-999", plan: "free" });
    expect((await call(a, token)).headers["x-ratelimit-limit"]).toBe(String(PRO_READS)); // warm the cache
    const admin = new Redis(redis.port, "127.0.0.1", { lazyConnect: true });
    await admin.connect();
    try {
      const commandCalls = async () => {
        const calls = new Map<string, number>();
        for (const m of (await admin.info("commandstats")).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
          calls.set(m[1]!, Number(m[2]));
        return calls;
      };
      const localAnswers = async () =>
        (await scrape(a.adminUrl)).sum("gateway_ratelimit_local_rejections_total");
      const local = await localAnswers();
      const before = await commandCalls();
      const N = 20;
      for (let i = 0; i < N; i++) {
        const r = await call(a, token);
        expect(r.headers["x-ratelimit-limit"]).toBe(String(PRO_READS)); // listed-999 is a pro consumer
      }
      const after = await commandCalls();
      // Past the pro limit (6), calls are answered 429 from Redis's earlier 429 without a call.
      const answeredHere = (await localAnswers()) - local;
      expect(answeredHere).toBeGreaterThan(0);
      const delta = [...after]
        .map(([cmd, n]) => [cmd, n - (before.get(cmd) ?? 0)] as const)
        .filter(([, n]) => n);
      // Our own INFO, one EVALSHA per request that reached Redis, and what the scripts run inside.
      const inScripts = new Set(["time", "hmget", "hset", "pexpire"]);
      expect(Object.fromEntries(delta.filter(([cmd]) => !inScripts.has(cmd)))).toEqual({
        info: 1,
        evalsha: N - answeredHere,
      });
    } finally {
      admin.disconnect();
    }
  });
});
