/**
 * SPEC §4: "Failing open is for a store that does not answer, never for a gateway that is busy."
 * Two and three gateway processes share one real Redis, every core is kept busy by a bounded CPU
 * hog, and bursts of 300 concurrent calls of one identity go round-robin over the replicas against
 * `sliding_log` and `sliding_window` classes with a limit of 100, at the default
 * `command_timeout_ms` (100 ms). Every round admits exactly 100, no call is decided by the memory
 * fallback, and no replica logs an outage: a reply waiting in a busy replica's socket is read
 * before its timeout is decided, and one slow burst does not open an outage.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { spawnGateway, childConfig, type ChildGateway } from "../helpers/child-gateway.js";
import { agent, closeServer, listen, request } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";
import { RedisServer } from "../helpers/redis-server.js";

const LIMIT = 100;
const BURST = 300;
const ROUNDS = 2;
/** The hog spins this long at most, whatever happens to the test (ms). */
const HOG_MS = 90_000;

let upstream: { server: Server; url: string };
let redis: RedisServer;
let replicas: ChildGateway[] = [];
let hogs: ChildProcess[] = [];
let dir: string;
const keepAlive = agent();

/** One fresh identity per round: `round-<n>` is the token and the subject. */
const TOKENS = Array.from({ length: 16 }, (_, i) => `round-${i}`);
let nextToken = 0;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "busy-replicas-"));
  const tokensFile = path.join(dir, "tokens.yaml");
  writeFileSync(tokensFile, TOKENS.map((t) => `${t}:\n  sub: ${t}\n  scope: read\n`).join(""));
  upstream = await listen((_req, res) => res.end("ok"));
  redis = await RedisServer.start();
  const rateLimits = {
    // command_timeout_ms left at its default (100 ms): the point of the test.
    store: { redis: { url: redis.url, key_prefix: "busy" } },
    classes: {
      log: {
        match: { paths: ["/v1/log"] },
        algorithm: "sliding_log",
        windows: [{ limit: LIMIT, window_s: 600 }],
      },
      window: {
        match: { paths: ["/v1/window"] },
        algorithm: "sliding_window",
        windows: [{ limit: LIMIT, window_s: 600 }],
      },
      other: { windows: [{ limit: 1_000_000, window_s: 600 }] },
    },
    anonymous: { windows: [{ limit: 1_000_000, window_s: 600 }] },
  };
  const start = () =>
    spawnGateway(
      (ports) =>
        childConfig(upstream.url, ports, {
          auth: { static: { tokens_file: tokensFile } },
          rate_limits: rateLimits,
          log: { level: "warn" },
        }),
      { readyTimeoutMs: 60_000 },
    );
  replicas = [await start(), await start(), await start()];
  // Every core busy (children spinning; each stops by itself after HOG_MS).
  hogs = Array.from({ length: availableParallelism() }, () =>
    spawn(process.execPath, ["-e", `const end = Date.now() + ${HOG_MS}; while (Date.now() < end);`], {
      stdio: "ignore",
    }),
  );
}, 120_000);

afterAll(async () => {
  for (const h of hogs) h.kill("SIGKILL");
  keepAlive.destroy();
  await Promise.all(replicas.map((r) => r.dispose()));
  await closeServer(upstream.server);
  await redis?.destroy();
  rmSync(dir, { recursive: true, force: true });
});

/** A burst of {@link BURST} concurrent calls of a fresh identity over the first `n` replicas. */
async function burst(n: number, pathName: string): Promise<number[]> {
  const token = TOKENS[nextToken++]!;
  const headers = { authorization: `Bearer ${token}` };
  // Each replica learns the token first (a cache miss is not what this test measures).
  for (const r of replicas.slice(0, n)) {
    expect((await request(`${r.url}/v1/other`, { headers, agent: keepAlive })).status).toBe(200);
  }
  const results = await Promise.all(
    Array.from({ length: BURST }, (_, i) =>
      request(`${replicas[i % n]!.url}${pathName}`, { headers, agent: keepAlive }),
    ),
  );
  return results.map((r) => r.status);
}

it.each([
  [2, "/v1/log"],
  [2, "/v1/window"],
  [3, "/v1/log"],
  [3, "/v1/window"],
])(
  "%i replicas on loaded cores admit exactly the limit of %s every round, with no outage",
  async (n, pathName) => {
    for (let round = 0; round < ROUNDS; round++) {
      const statuses = await burst(n, pathName);
      expect({ round, admitted: statuses.filter((s) => s === 200).length }).toEqual({
        round,
        admitted: LIMIT,
      });
      expect(statuses.filter((s) => s === 429)).toHaveLength(BURST - LIMIT);
    }
    for (const r of replicas) {
      const m = await scrape(r.adminUrl);
      expect(m.sum("gateway_ratelimit_decisions_total", { outcome: "degraded" })).toBe(0);
      expect(m.sum("gateway_ratelimit_store_degraded")).toBe(0);
      expect(r.lines.filter((l) => String(l.msg).startsWith("rate-limit store unavailable"))).toEqual([]);
    }
  },
  120_000,
);
