/**
 * SPEC §21 end to end: a real redis-server, two gateway replicas sharing it, a real webhook
 * receiver (node:http on port 0) that verifies each POST's HMAC-SHA256 signature.
 *
 * - crossing 50 % and 100 % of a monthly quota with calls spread over both replicas makes exactly
 *   one signed POST per threshold, with the body of SPEC §21 (deduplicated in Redis);
 * - a receiver that answers 500 gets the same delivery again, same id, same body and signature;
 * - a receiver that never answers adds no latency to calls, and a crossing that finds the queue
 *   full is dropped and counted;
 * - a reload re-reads the secret file: the next POST is signed with the new key;
 * - `GET /usage/top` lists the callers' exact counts whichever replica counted them, behind the
 *   injected admin check (401 without the token, 404 without a check at all).
 */
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { stringify } from "yaml";
import { parseConfig } from "../../gateway/config/load.js";
import { FIXTURES, startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { agent, closeServer, listen, request } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";
import { RedisServer } from "../helpers/redis-server.js";

const SECRET = "whsec-test-0123456789";
const ADMIN = "Bearer admin-test-token";

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** The webhook receiver: records every POST; `answer` picks the status (or null: never answer). */
async function startReceiver() {
  const received: Received[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  let answer: (r: Received, n: number) => number | null = () => 204;
  const { server, url } = await listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      received.push(r);
      for (const w of waiters.filter((x) => received.length >= x.n)) w.resolve();
      const status = answer(r, received.length);
      if (status !== null) res.writeHead(status).end();
    });
  });
  return {
    url,
    received,
    set answer(f: (r: Received, n: number) => number | null) {
      answer = f;
    },
    /** Resolves once `n` POSTs have arrived in all. */
    count: (n: number) =>
      received.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve })),
    close: () => closeServer(server),
  };
}

const signed = (r: Received): boolean =>
  r.headers["x-gateway-signature"] === `sha256=${createHmac("sha256", SECRET).update(r.body).digest("hex")}`;

let redis: RedisServer;
let upstream: Awaited<ReturnType<typeof listen>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let hanging: Awaited<ReturnType<typeof startReceiver>>;
let dir: string;
let a: TestGateway;
let b: TestGateway;
let c: TestGateway;
const keepAlive = agent();

/** @param admin - with `admin.token_file` (usage operations on: `/usage/top` behind its token) */
function config(
  prefix: string,
  url: string,
  limit: number,
  extra: Record<string, unknown> = {},
  admin = true,
) {
  return testConfig(upstream.url, {
    ...(admin ? { admin: { host: "127.0.0.1", port: 0, token_file: path.join(dir, "admin-token") } } : {}),
    rate_limits: {
      store: { redis: { url: redis.url, key_prefix: prefix, command_timeout_ms: 5000 } },
      classes: {
        read: {
          match: { methods: ["GET"] },
          windows: [
            { limit: 1000, window_s: 60 },
            { limit, period: "month" },
          ],
        },
      },
    },
    notifications: {
      webhooks: [{ url, secret_file: path.join(dir, "secret"), thresholds: [0.5, 1], timeout_ms: 10_000 }],
      ...extra,
    },
  });
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "webhooks-"));
  writeFileSync(path.join(dir, "secret"), `${SECRET}\n`);
  writeFileSync(path.join(dir, "admin-token"), `${ADMIN.slice("Bearer ".length)}\n`);
  redis = await RedisServer.start();
  upstream = await listen((_req, res) => res.end("ok"));
  receiver = await startReceiver();
  hanging = await startReceiver();
  hanging.answer = () => null;
  a = await startGateway(config("hooks", receiver.url, 10));
  b = await startGateway(config("hooks", receiver.url, 10));
  c = await startGateway(config("hooks-full", hanging.url, 4, { queue_size: 1 }, false));
});

afterAll(async () => {
  keepAlive.destroy();
  await Promise.all([a?.close(), b?.close(), c?.close()]);
  await Promise.all([receiver?.close(), hanging?.close(), upstream && closeServer(upstream.server)]);
  await redis?.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const call = (g: TestGateway, token: string) =>
  request(`${g.url}/v1/items`, { headers: { authorization: `Bearer ${token}` }, agent: keepAlive });

/** Waits until neither replica holds a delivery (sent, answered, nothing to retry). */
async function settled(...gs: TestGateway[]): Promise<void> {
  await vi.waitFor(() => {
    for (const g of gs) expect(g.gateway.runtime.notifier!.queue.size).toBe(0);
  });
}

it("sends one signed POST per threshold across both replicas, with the body of SPEC §21", async () => {
  const statuses: number[] = [];
  for (let i = 0; i < 12; i++) statuses.push((await call(i % 2 === 0 ? a : b, "valid-token")).status);
  expect(statuses).toEqual([...Array(10).fill(200), 429, 429]);
  await receiver.count(2);
  await settled(a, b);
  expect(receiver.received).toHaveLength(2);
  for (const r of receiver.received) {
    expect(signed(r)).toBe(true);
    expect(r.headers["content-type"]).toBe("application/json");
    expect(r.headers["x-gateway-delivery"]).toMatch(/^[0-9a-f-]{36}$/);
  }
  const bodies = receiver.received.map((r) => JSON.parse(r.body) as Record<string, unknown>);
  bodies.sort((x, y) => (x.threshold as number) - (y.threshold as number));
  const now = new Date();
  const reset = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1) / 1000;
  const common = { type: "usage.threshold", identity: "sub:alice", plan: null, class: "read", reset };
  expect(bodies[0]).toMatchObject({ ...common, window: { limit: 10, period: "month" }, threshold: 0.5 });
  expect(bodies[0]).toMatchObject({ used: 5, remaining: 5 });
  expect(bodies[1]).toMatchObject({ ...common, threshold: 1, used: 10, remaining: 0 });
  expect(Math.abs(Date.parse(bodies[1]!.time as string) - Date.now())).toBeLessThan(60_000);
  const delivered = (await scrape(a.adminUrl)).value("gateway_webhook_deliveries_total", {
    result: "delivered",
  });
  const deliveredB = (await scrape(b.adminUrl)).value("gateway_webhook_deliveries_total", {
    result: "delivered",
  });
  expect(delivered + deliveredB).toBe(2);
});

it("retries a delivery the receiver refused, with the same id, body and signature", async () => {
  const before = receiver.received.length;
  receiver.answer = (_r, n) => (n === before + 1 ? 500 : 204);
  for (let i = 0; i < 5; i++) expect((await call(i % 2 === 0 ? b : a, "reader-token")).status).toBe(200);
  await receiver.count(before + 2);
  await settled(a, b);
  const [first, second] = receiver.received.slice(before);
  expect(receiver.received).toHaveLength(before + 2);
  expect(second!.headers["x-gateway-delivery"]).toBe(first!.headers["x-gateway-delivery"]);
  expect(second!.body).toBe(first!.body);
  expect(second!.headers["x-gateway-signature"]).toBe(first!.headers["x-gateway-signature"]);
  expect(signed(second!)).toBe(true);
  expect(JSON.parse(second!.body)).toMatchObject({ identity: "sub:bob", threshold: 0.5, used: 5 });
  const retried = [a, b].map(async (g) =>
    (await scrape(g.adminUrl)).value("gateway_webhook_deliveries_total", { result: "retried" }),
  );
  expect((await Promise.all(retried)).reduce((x, y) => x + y)).toBe(1);
});

it("adds no latency while the receiver never answers, and counts a crossing the full queue drops", async () => {
  const took: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const res = await call(c, "client-token");
    took.push(performance.now() - t0);
    expect(res.status).toBe(i < 4 ? 200 : 429);
  }
  // The 50 % delivery is in flight to a receiver that holds it (10 s timeout); the 100 % one found
  // the queue (of 1) full.
  await hanging.count(1);
  expect(Math.max(...took)).toBeLessThan(1000);
  const m = await scrape(c.adminUrl);
  expect(m.value("gateway_webhook_deliveries_total", { result: "dropped" })).toBe(1);
  expect(m.value("gateway_webhook_deliveries_total", { result: "delivered" })).toBe(0);
  expect(hanging.received).toHaveLength(1);
  expect(JSON.parse(hanging.received[0]!.body)).toMatchObject({ identity: "client:svc", threshold: 0.5 });
});

it("lists the top callers exactly, whichever replica counted them, behind the admin check", async () => {
  await Promise.all(Array.from({ length: 7 }, (_, i) => call(i % 2 === 0 ? a : b, "client-token")));
  const top = { class: "read", period: "month" };
  const expected = {
    ...top,
    top: [
      { identity: "sub:alice", used: 10 },
      { identity: "client:svc", used: 7 },
      { identity: "sub:bob", used: 5 },
    ],
  };
  for (const g of [a, b]) {
    const res = await request(`${g.adminUrl}/usage/top?class=read&period=month`, {
      headers: { authorization: ADMIN },
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual(expected);
  }
  const two = await request(`${a.adminUrl}/usage/top?class=read&n=2`, { headers: { authorization: ADMIN } });
  expect(JSON.parse(two.body)).toEqual({ ...top, top: expected.top.slice(0, 2) });
  expect((await request(`${a.adminUrl}/usage/top?class=read`)).status).toBe(401);
  const bad = await request(`${a.adminUrl}/usage/top?class=read&n=101`, {
    headers: { authorization: ADMIN },
  });
  expect(bad.status).toBe(400);
  expect(bad.body).toContain("n: expected an integer from 1 to 100");
  const unknown = await request(`${a.adminUrl}/usage/top?class=nope`, { headers: { authorization: ADMIN } });
  expect(unknown.status).toBe(400);
  // Without an admin check (no admin.token_file), the path does not exist.
  expect(
    (await request(`${c.adminUrl}/usage/top?class=read`, { headers: { authorization: ADMIN } })).status,
  ).toBe(404);
});

it("signs with the new secret after a reload re-reads the file", async () => {
  writeFileSync(path.join(dir, "secret"), "whsec-rotated\n");
  for (const g of [a, b]) {
    const loaded = {
      config: parseConfig(stringify(config("hooks", receiver.url, 10)), "test"),
      baseDir: FIXTURES,
    };
    g.gateway.prepare(loaded).commit();
  }
  const before = receiver.received.length;
  for (let i = 0; i < 5; i++) expect((await call(i % 2 === 0 ? a : b, "reader-token")).status).toBe(200);
  await receiver.count(before + 1);
  await settled(a, b);
  const r = receiver.received[before]!;
  expect(JSON.parse(r.body)).toMatchObject({ identity: "sub:bob", threshold: 1, used: 10 });
  expect(signed(r)).toBe(false);
  expect(r.headers["x-gateway-signature"]).toBe(
    `sha256=${createHmac("sha256", "whsec-rotated").update(r.body).digest("hex")}`,
  );
});
