/**
 * SPEC §21 with `workers: 2` (SPEC §15), against the real `gateway start` command: the workers
 * share Redis, each with its own delivery queue, and the deduplication key in Redis makes one POST
 * per threshold however the calls are spread over the workers; `/metrics` of the primary sums the
 * workers' `gateway_webhook_deliveries_total`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { childConfig, spawnGateway, type ChildGateway } from "../helpers/child-gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";
import { RedisServer } from "../helpers/redis-server.js";

let redis: RedisServer;
let upstream: Awaited<ReturnType<typeof listen>>;
let receiver: Awaited<ReturnType<typeof listen>>;
const bodies: string[] = [];
let dir: string;
let gw: ChildGateway;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "webhook-workers-"));
  writeFileSync(path.join(dir, "secret"), "whsec-workers\n");
  redis = await RedisServer.start();
  upstream = await listen((_req, res) => res.end("ok"));
  receiver = await listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      bodies.push(Buffer.concat(chunks).toString("utf8"));
      res.writeHead(204).end();
    });
  });
  gw = await spawnGateway(
    (ports) =>
      childConfig(upstream.url, ports, {
        workers: 2,
        rate_limits: {
          store: { redis: { url: redis.url, key_prefix: "hook-workers", command_timeout_ms: 2000 } },
          classes: { read: { match: { methods: ["GET"] }, windows: [{ limit: 20, period: "day" }] } },
          anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
        },
        notifications: {
          webhooks: [
            { url: receiver.url, secret_file: path.join(dir, "secret"), thresholds: [0.25, 0.5, 1] },
          ],
        },
      }),
    { readyTimeoutMs: 40_000 },
  );
  await gw.waitForLine((l) => l.msg === "gateway listening" && Array.isArray(l.workerPids));
}, 60_000);

afterAll(async () => {
  await gw?.dispose();
  await Promise.all([upstream && closeServer(upstream.server), receiver && closeServer(receiver.server)]);
  await redis?.destroy();
  rmSync(dir, { recursive: true, force: true });
});

it("sends one POST per threshold whichever worker counted the calls", async () => {
  // Each call on a connection of its own: node:cluster hands connections to the workers in turn.
  const statuses = await Promise.all(
    Array.from({ length: 24 }, () =>
      request(`${gw.url}/v1/items`, { headers: { authorization: "Bearer valid-token" } }).then(
        (r) => r.status,
      ),
    ),
  );
  expect(statuses.filter((s) => s === 200)).toHaveLength(20);
  await vi.waitFor(
    async () => {
      const m = await scrape(gw.adminUrl);
      expect(m.value("gateway_webhook_deliveries_total", { result: "delivered" })).toBe(3);
    },
    { timeout: 10_000 },
  );
  const seen = bodies.map((b) => JSON.parse(b) as { identity: string; threshold: number; used: number });
  expect(seen.map((b) => b.threshold).sort()).toEqual([0.25, 0.5, 1]);
  for (const b of seen) expect(b).toMatchObject({ identity: "sub:alice", used: Math.ceil(b.threshold * 20) });
});
