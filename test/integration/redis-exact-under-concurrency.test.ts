/**
 * SPEC §4: concurrent calls from many replicas never admit more than the limit. Two RedisStore
 * instances (two connections, as two gateway replicas would have) share one redis-server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { RedisStore } from "../../gateway/ratelimit/redis-store.js";
import { cli, RedisServer } from "../helpers/redis-server.js";

let server: RedisServer;
let a: RedisStore;
let b: RedisStore;

beforeAll(async () => {
  server = await RedisServer.start();
  const redis = { url: server.url, key_prefix: "exact", command_timeout_ms: 5000 };
  a = new RedisStore({ redis });
  b = new RedisStore({ redis });
});

afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
  await server.destroy();
});

/** 300 calls split across both stores, all in flight at once. */
async function burst(key: string, policy: LimitPolicy): Promise<number> {
  const calls = Array.from({ length: 300 }, (_, i) => (i % 2 === 0 ? a : b).consume(key, policy));
  const decisions = await Promise.all(calls);
  return decisions.filter((d) => d.allowed).length;
}

describe("Redis store under concurrency", () => {
  it.each(["sliding_log", "sliding_window"] as const)(
    "%s admits exactly the limit of 300 concurrent calls",
    async (algorithm) => {
      const policy: LimitPolicy = {
        className: "c",
        algorithm,
        mode: "enforce",
        windows: [{ limit: 100, windowS: 3600 }],
      };
      expect(await burst(`u:${algorithm}`, policy)).toBe(100);
      const d = await a.peek(`u:${algorithm}`, policy);
      expect(d).toMatchObject({ allowed: false, remaining: 0, limit: 100 });
    },
  );

  it("multi-window sliding_log admits the tightest window's limit and counts admitted calls in every window", async () => {
    const policy: LimitPolicy = {
      className: "multi",
      algorithm: "sliding_log",
      mode: "enforce",
      windows: [
        { limit: 100, windowS: 3600 },
        { limit: 40, windowS: 60 },
      ],
    };
    expect(await burst("u:multi", policy)).toBe(40);
    // rejected calls are not counted: both logs hold exactly the 40 admitted calls
    expect(await cli(server.port, "ZCARD", a.keyOf("u:multi", policy, 0))).toBe("40");
    expect(await cli(server.port, "ZCARD", a.keyOf("u:multi", policy, 1))).toBe("40");
    const d = await b.peek("u:multi", policy);
    expect(d).toMatchObject({ allowed: false, limit: 40, remaining: 0 });
  });

  it("multi-window sliding_window counts admitted calls in every window", async () => {
    const policy: LimitPolicy = {
      className: "multiw",
      algorithm: "sliding_window",
      mode: "enforce",
      windows: [
        { limit: 60, windowS: 3600 },
        { limit: 1000, windowS: 86400 },
      ],
    };
    expect(await burst("u:multiw", policy)).toBe(60);
    expect(await cli(server.port, "HGET", a.keyOf("u:multiw", policy, 1), "c")).toBe("60");
    const d = await a.peek("u:multiw", policy);
    expect(d).toMatchObject({ allowed: false, limit: 60, remaining: 0 });
  });
});
