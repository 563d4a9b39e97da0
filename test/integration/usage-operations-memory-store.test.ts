/**
 * Usage operations on the memory store (SPEC §21), one gateway:
 * - without `admin.token_file`, `/usage` and `/overrides` answer 404 and the other admin paths are
 *   unchanged; a missing or wrong token gets 401 JSON;
 * - `GET /usage/<identity>` reads every window of every class, counting nothing;
 * - an override raises a limit for the identity's next call, is validated naming the member,
 *   listed, and deleted; counts are kept, so a credit shows at once;
 * - a reset zeroes one class or all, and is audited (never with the token) and counted;
 * - a reload re-reads the token file and keeps the memory store's overrides.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { createLogger } from "../../gateway/observability/logger.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { logLines } from "../helpers/log-lines.js";
import { scrape } from "../helpers/prom.js";

const TOKEN = "admin-secret-memory-1";
let upstream: Awaited<ReturnType<typeof listen>>;
let dir: string;
let tokenFile: string;
let gw: TestGateway;
let plain: TestGateway;
const logs = logLines();

const admin = (p: string, init: { method?: string; body?: unknown; token?: string | null } = {}) =>
  request(`${gw.adminUrl}${p}`, {
    method: init.method ?? "GET",
    headers: {
      ...(init.token === null ? {} : { authorization: `Bearer ${init.token ?? TOKEN}` }),
      ...(init.body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
const api = (p: string, token = "valid-token", method = "GET") =>
  request(`${gw.url}${p}`, { method, headers: { authorization: `Bearer ${token}` } });

function config(extra: Record<string, unknown> = {}): Record<string, unknown> {
  const base = testConfig(upstream.url, { log: { level: "info" } });
  return { ...base, admin: { host: "127.0.0.1", port: 0, ...extra } };
}

beforeAll(async () => {
  upstream = await listen((_req, res) => res.end("ok"));
  dir = mkdtempSync(path.join(tmpdir(), "gw-usage-mem-"));
  tokenFile = path.join(dir, "admin-token");
  writeFileSync(tokenFile, `${TOKEN}\n`);
  gw = await startGateway(config({ token_file: tokenFile }), {
    logger: createLogger("info", logs.destination),
  });
  plain = await startGateway(testConfig(upstream.url));
});

afterAll(async () => {
  await Promise.all([gw?.close(), plain?.close()]);
  await closeServer(upstream.server);
  rmSync(dir, { recursive: true, force: true });
});

describe("access", () => {
  it("answers 404 without admin.token_file, and the other admin paths are unchanged", async () => {
    for (const p of ["/usage/sub:alice", "/overrides", "/overrides/sub:alice"]) {
      const r = await request(`${plain.adminUrl}${p}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(r.status).toBe(404);
      expect(JSON.parse(r.body)).toEqual({ error: { code: 404, message: "Not found" } });
    }
    expect((await request(`${plain.adminUrl}/healthz`)).status).toBe(200);
    expect((await request(`${gw.adminUrl}/readyz`)).status).toBe(200);
    expect((await request(`${gw.adminUrl}/upstreams`)).status).toBe(200);
  });

  it("serves /usage/top behind the same token", async () => {
    expect((await admin("/usage/top?class=read", { token: null })).status).toBe(401);
    const top = await admin("/usage/top?class=read");
    expect(top.status).toBe(400); // the test classes have no calendar window
    expect(JSON.parse(top.body).error.message).toContain("period");
    expect((await request(`${plain.adminUrl}/usage/top?class=read`)).status).toBe(404);
  });

  it("answers 401 JSON to a missing or wrong token", async () => {
    for (const token of [null, "wrong", `${TOKEN}x`, ""]) {
      const r = await admin("/usage/sub:alice", { token });
      expect(r.status).toBe(401);
      expect(r.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(r.headers["www-authenticate"]).toBe('Bearer realm="admin"');
      expect(JSON.parse(r.body).error.code).toBe(401);
    }
  });
});

describe("usage, overrides and resets", () => {
  it("reads every window without counting", async () => {
    for (let i = 0; i < 3; i++) expect((await api("/v1/x")).status).toBe(200);
    const first = JSON.parse((await admin("/usage/sub%3Aalice")).body);
    const second = JSON.parse((await admin("/usage/sub:alice")).body);
    expect(second).toEqual(first);
    expect(first.identity).toBe("sub:alice");
    expect(first.plan).toBeNull();
    expect(first.override).toBeNull();
    expect(Object.keys(first.classes)).toEqual(["search", "read", "write"]);
    expect(first.classes.read).toEqual([
      { limit: 100, window_s: 3600, used: 3, remaining: 97, reset: expect.any(Number) },
    ]);
    expect(first.classes.write.map((w: { used: number }) => w.used)).toEqual([0, 0]);
    expect((await admin("/usage/nobody")).status).toBe(400);
    expect((await admin("/usage/sub:alice?plan=gold")).status).toBe(400);
  });

  it("applies an override to the next call, keeps the counts, validates it and removes it", async () => {
    // Spend the write class's first window (3 per 10 s).
    for (let i = 0; i < 3; i++) expect((await api("/v1/x", "valid-token", "POST")).status).toBe(200);
    expect((await api("/v1/x", "valid-token", "POST")).status).toBe(429);
    const bad = await admin("/overrides/sub:alice", {
      method: "PUT",
      body: { classes: { write: [{ limit: 0, window_s: 10 }], nope: [{ limit: 1, window_s: 1 }] } },
    });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).error.message).toContain("classes.write[0].limit");
    expect(JSON.parse(bad.body).error.message).toContain("classes.nope");
    const put = await admin("/overrides/sub:alice", {
      method: "PUT",
      body: { classes: { write: [{ limit: 5, window_s: 10 }] } },
    });
    expect(put.status).toBe(200);
    const r = await api("/v1/x", "valid-token", "POST");
    expect(r.status).toBe(200);
    expect(r.headers["x-ratelimit-limit"]).toBe("5");
    expect(r.headers["x-ratelimit-remaining"]).toBe("1");
    // GET /rate_limit shows the caller the override's limits too.
    const status = JSON.parse((await api("/rate_limit")).body);
    expect(status.resources.write).toMatchObject({ limit: 5, remaining: 1 });
    const usage = JSON.parse((await admin("/usage/sub:alice")).body);
    expect(usage.override.classes.write).toEqual([{ limit: 5, window_s: 10 }]);
    expect(usage.classes.write[0]).toMatchObject({ limit: 5, used: 4, remaining: 1 });
    expect(JSON.parse((await admin("/overrides")).body).overrides).toEqual([
      { identity: "sub:alice", classes: { write: [{ limit: 5, window_s: 10 }] }, expires_at: null },
    ]);
    expect((await admin("/overrides/sub:alice", { method: "DELETE" })).status).toBe(200);
    expect((await admin("/overrides/sub:alice")).status).toBe(404);
    expect((await api("/v1/x", "valid-token", "POST")).status).toBe(429);
    // SPEC §21: each change audited with what it was and became.
    const override = {
      identity: "sub:alice",
      classes: { write: [{ limit: 5, window_s: 10 }] },
      expires_at: null,
    };
    const audited = (action: string) => logs.lines.find((l) => l.audit === true && l.action === action);
    expect(audited("override_put")).toMatchObject({
      level: "info",
      identity: "sub:alice",
      before: null,
      after: override,
    });
    expect(audited("override_delete")).toMatchObject({
      identity: "sub:alice",
      before: override,
      after: null,
    });
  });

  it("resets one class or every class, audited and counted", async () => {
    const one = await admin("/usage/sub:alice/reset", { method: "POST", body: { class: "write" } });
    expect(one.status).toBe(200);
    const after = JSON.parse(one.body);
    expect(after.classes.write.map((w: { used: number }) => w.used)).toEqual([0, 0]);
    expect(after.classes.read[0].used).toBe(3);
    expect((await api("/v1/x", "valid-token", "POST")).status).toBe(200);
    const all = JSON.parse((await admin("/usage/sub:alice/reset", { method: "POST" })).body);
    expect(all.classes.read[0].used).toBe(0);
    expect(all.classes.write[0].used).toBe(0);
    expect((await admin("/usage/sub:alice/reset", { method: "POST", body: { class: "x" } })).status).toBe(
      400,
    );
    const line = await logs.waitFor((l) => l.audit === true && l.action === "usage_reset");
    expect(line).toMatchObject({ level: "info", identity: "sub:alice", classes: ["write"] });
    expect((line.before as Record<string, { used: number }[]>).write![0]!.used).toBe(3);
    const audits = logs.lines.filter((l) => l.audit === true).map((l) => l.action);
    expect(audits).toEqual(expect.arrayContaining(["override_put", "override_delete", "usage_reset"]));
    expect(JSON.stringify(logs.lines)).not.toContain(TOKEN);
    const m = await scrape(gw.adminUrl);
    expect(m.value("gateway_admin_requests_total", { action: "usage_reset", code: "200" })).toBe(2);
    expect(m.value("gateway_admin_requests_total", { action: "usage_read", code: "401" })).toBe(4);
    expect(m.value("gateway_admin_requests_total", { action: "usage_top", code: "401" })).toBe(1);
    expect(m.value("gateway_admin_requests_total", { action: "override_put", code: "400" })).toBe(1);
  });

  it("re-reads the token file on reload and keeps the memory store's overrides", async () => {
    await admin("/overrides/sub:bob", {
      method: "PUT",
      body: { classes: { read: [{ limit: 7, window_s: 60 }] } },
    });
    writeFileSync(tokenFile, "rotated-admin-token\n");
    const file = path.join(dir, "gateway.yaml");
    // A change the memory store cannot keep (its size) builds a new store: overrides move over.
    const next = config({ token_file: tokenFile });
    (next.rate_limits as Record<string, unknown>).memory = { max_keys: 5000 };
    writeFileSync(file, stringify(next));
    expect(await gw.gateway.reload(file)).toBe(true);
    expect((await admin("/overrides")).status).toBe(401);
    const r = await admin("/overrides/sub:bob", { token: "rotated-admin-token" });
    expect(r.status).toBe(200);
    const call = await api("/v1/x", "reader-token");
    expect(call.headers["x-ratelimit-limit"]).toBe("7");
  });
});
