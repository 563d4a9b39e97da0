/**
 * SPEC §4: every Redis key expires after its window, so idle identities cost nothing: a
 * `sliding_log` key W after its last admitted call, a `sliding_window` key 2W after it (the
 * previous fixed window's count is still read). Calls go through a real gateway; the keys are read
 * back from a real redis-server (PTTL), and the short windows' keys are seen to expire (Redis's
 * own keyspace notifications, no sleeping).
 */
import type { Server } from "node:http";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { RedisServer } from "../helpers/redis-server.js";

const PREFIX = "expiry";

/**
 * What a limiter key says about itself: the algorithm and window length of the one window it
 * holds. The one place here that knows the key format (`...:<window_s>` and `:log` for sliding_log).
 */
function windowOf(key: string): { algorithm: "sliding_log" | "sliding_window"; windowS: number } {
  const m = /:(\d+)(:log)?$/.exec(key);
  if (m === null) throw new Error(`not a limiter key: ${key}`);
  return { algorithm: m[2] === undefined ? "sliding_window" : "sliding_log", windowS: Number(m[1]) };
}

let redis: RedisServer;
let admin: Redis;
let upstream: { server: Server; url: string };
let gw: TestGateway;

beforeAll(async () => {
  redis = await RedisServer.start(["--notify-keyspace-events", "Ex"]);
  admin = new Redis(redis.port, "127.0.0.1");
  upstream = await listen((_req, res) => res.end("ok"));
  const windows = [
    { limit: 5, window_s: 1 },
    { limit: 50, window_s: 60 },
  ];
  gw = await startGateway(
    testConfig(upstream.url, {
      rate_limits: {
        store: { redis: { url: redis.url, key_prefix: PREFIX, command_timeout_ms: 2000 } },
        classes: {
          search: { match: { paths: ["/v1/search"] }, algorithm: "sliding_log", windows },
          read: { match: { methods: ["GET"] }, algorithm: "sliding_window", windows },
        },
      },
    }),
  );
});

afterAll(async () => {
  await gw.close();
  admin.disconnect();
  await closeServer(upstream.server);
  await redis.destroy();
});

it("sets PTTL ≤ W on sliding_log keys and ≤ 2W on sliding_window keys, and Redis drops them", async () => {
  const subscriber = new Redis(redis.port, "127.0.0.1");
  const expired: string[] = [];
  await subscriber.subscribe("__keyevent@0__:expired");
  subscriber.on("message", (_channel, key: string) => expired.push(key));
  const bothShortKeysExpired = new Promise<void>((resolve) =>
    subscriber.on("message", () => {
      if (expired.filter((k) => windowOf(k).windowS === 1).length === 2) resolve();
    }),
  );
  try {
    const auth = { authorization: "Bearer valid-token" };
    for (const path of ["/v1/search", "/v1/user"]) {
      expect((await request(`${gw.url}${path}`, { headers: auth })).status).toBe(200);
    }
    const keys = (await admin.keys(`${PREFIX}:*`)).sort();
    expect(keys).toHaveLength(4); // two classes × two windows; the token's guard peek writes nothing
    for (const key of keys) {
      const { algorithm, windowS } = windowOf(key);
      const factor = algorithm === "sliding_log" ? 1 : 2;
      const pttl = await admin.pttl(key);
      expect(pttl, key).toBeGreaterThan((factor * windowS - 1) * 1000); // set at the call, just now
      expect(pttl, key).toBeLessThanOrEqual(factor * windowS * 1000);
    }
    await bothShortKeysExpired;
    expect(expired.map((k) => windowOf(k))).toEqual([
      { algorithm: "sliding_log", windowS: 1 },
      { algorithm: "sliding_window", windowS: 1 },
    ]);
    expect((await admin.keys(`${PREFIX}:*`)).map((k) => windowOf(k).windowS)).toEqual([60, 60]);
  } finally {
    subscriber.disconnect();
  }
});
