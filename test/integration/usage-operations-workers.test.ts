/**
 * Usage operations with `workers: 2` (SPEC §21 with §15), against the real `gateway start`
 * command and a real Redis: the primary's admin listener hands `/usage` and `/overrides` calls to a
 * worker; an override or a reset made through it reaches both workers' next calls within 1 s (each
 * worker polls the store), including a worker that was refusing the identity locally; the admin
 * token is checked, never logged, and the calls are counted in the group's `/metrics`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childConfig, spawnGateway, type ChildGateway } from "../helpers/child-gateway.js";
import { request } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";
import { RedisServer, waitFor } from "../helpers/redis-server.js";

const TOKEN = "workers-admin-token-0123";
let redis: RedisServer;
let dir: string;
let gw: ChildGateway;
const upstreamUrl = "http://127.0.0.1:1"; // calls are refused before the proxy (429) or count (502)

beforeAll(async () => {
  redis = await RedisServer.start();
  dir = mkdtempSync(path.join(tmpdir(), "gw-usage-workers-"));
  writeFileSync(path.join(dir, "admin-token"), `${TOKEN}\n`);
  gw = await spawnGateway(
    (ports) => {
      const c = childConfig(upstreamUrl, ports, {
        workers: 2,
        rate_limits: {
          store: { redis: { url: redis.url, key_prefix: "usage-workers", command_timeout_ms: 2000 } },
          classes: { write: { match: { methods: ["POST"] }, windows: [{ limit: 2, window_s: 3600 }] } },
          anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
        },
      });
      return { ...c, admin: { ...(c.admin as object), token_file: path.join(dir, "admin-token") } };
    },
    { readyTimeoutMs: 40_000 },
  );
  await gw.waitForLine((l) => l.msg === "gateway listening" && Array.isArray(l.workerPids));
}, 60_000);

afterAll(async () => {
  await gw?.dispose();
  await redis.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const admin = (p: string, method = "GET", body?: unknown, token = TOKEN) =>
  request(`${gw.adminUrl}${p}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
/** One POST as alice, on a connection of its own (node:cluster hands connections out in turn). */
const post = () =>
  request(`${gw.url}/v1/x`, { method: "POST", headers: { authorization: "Bearer valid-token" } });

describe("usage operations with workers", () => {
  it("refuses a wrong token and serves usage through the primary", async () => {
    expect((await admin("/usage/sub:alice", "GET", undefined, "nope")).status).toBe(401);
    for (let i = 0; i < 2; i++) expect((await post()).status).toBe(502);
    const usage = JSON.parse((await admin("/usage/sub:alice")).body);
    expect(usage.classes.write[0]).toMatchObject({ limit: 2, used: 2, remaining: 0 });
  });

  it("applies a reset and an override on both workers within 1 s", async () => {
    /** Waits until 1 s has passed since `t0`: the bound SPEC §21 gives every replica. */
    const oneSecondAfter = (t0: number) => waitFor("1 s", async () => performance.now() - t0 >= 1000, 2000);
    // Both workers refuse alice now (locally once each has seen a refusal).
    for (let i = 0; i < 4; i++) expect((await post()).status).toBe(429);
    expect((await admin("/usage/sub:alice/reset", "POST")).status).toBe(200);
    await oneSecondAfter(performance.now());
    // Two calls on two connections: one on each worker; both admitted.
    expect((await post()).status).toBe(502);
    expect((await post()).status).toBe(502);
    for (let i = 0; i < 4; i++) expect((await post()).status).toBe(429);
    const put = await admin("/overrides/sub:alice", "PUT", {
      classes: { write: [{ limit: 3, window_s: 3600 }] },
    });
    expect(put.status).toBe(200);
    await oneSecondAfter(performance.now());
    const r = await post();
    expect(r.status).toBe(502);
    expect(r.headers["x-ratelimit-limit"]).toBe("3");
    for (let i = 0; i < 4; i++) {
      const refused = await post();
      expect(refused.status).toBe(429);
      expect(refused.headers["x-ratelimit-limit"]).toBe("3");
    }
  });

  it("counts the calls in the group's metrics and logs audits without the token", async () => {
    const m = await scrape(gw.adminUrl);
    expect(m.value("gateway_admin_requests_total", { action: "usage_read", code: "401" })).toBe(1);
    expect(m.value("gateway_admin_requests_total", { action: "usage_reset", code: "200" })).toBe(1);
    expect(m.value("gateway_admin_requests_total", { action: "override_put", code: "200" })).toBe(1);
    await gw.waitForLine((l) => l.audit === true && l.action === "usage_reset");
    expect(JSON.stringify(gw.lines)).not.toContain(TOKEN);
  });
});
