/**
 * The Lua scripts implement the same algorithms as `sliding.ts` (SPEC §4: "the same semantics"):
 * a bursty sequence of calls against Redis, replayed into the memory store at the Redis `TIME` each
 * decision reports, gives identical decisions, remaining counts and resets.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { ManualClock } from "../../gateway/clock.js";
import type { Algorithm, Decision, LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { MemoryStore } from "../../gateway/ratelimit/memory-store.js";
import { RedisStore } from "../../gateway/ratelimit/redis-store.js";
import { RedisServer } from "../helpers/redis-server.js";

let server: RedisServer;
let store: RedisStore;

beforeAll(async () => {
  server = await RedisServer.start();
  store = new RedisStore({ redis: { url: server.url, key_prefix: "parity", command_timeout_ms: 5000 } });
});

afterAll(async () => {
  await store.close();
  await server.destroy();
});

/** Deterministic PRNG (mulberry32) so a failure can be replayed. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = (d: Decision) => ({
  allowed: d.allowed,
  limit: d.limit,
  remaining: d.remaining,
  resetAtMs: d.resetAtMs,
});

async function replay(algorithm: Algorithm, seed: number): Promise<{ calls: number; allowed: number }> {
  const policy: LimitPolicy = {
    name: "p",
    algorithm,
    mode: "enforce",
    windows: [
      { limit: 6, windowS: 1 },
      { limit: 10, windowS: 2 },
    ],
  };
  const clock = new ManualClock(0);
  const memory = new MemoryStore({ clock });
  const rnd = prng(seed);
  const key = `u:${algorithm}`;
  let calls = 0;
  let allowed = 0;
  const end = Date.now() + 3000;
  while (Date.now() < end) {
    const burst = 1 + Math.floor(rnd() * 5);
    for (let i = 0; i < burst; i++) {
      const count = rnd() > 0.1;
      const r = count ? await store.consume(key, policy) : await store.peek(key, policy);
      clock.set(r.nowMs);
      const m = memory.decide(key, policy, count);
      expect(pick(r), `call ${calls} at ${r.nowMs}`).toEqual(pick(m));
      calls++;
      if (count && r.allowed) allowed++;
    }
    // idle gaps let windows slide and roll over
    await new Promise((res) => setTimeout(res, rnd() * 250));
  }
  return { calls, allowed };
}

it("Redis and memory store decide a bursty trace identically, for both algorithms", async () => {
  const results = await Promise.all([replay("sliding_window", 42), replay("sliding_log", 7)]);
  for (const [i, { calls, allowed }] of results.entries()) {
    console.log(
      `${i === 0 ? "sliding_window" : "sliding_log"}: ${calls} calls, ${allowed} admitted, all identical`,
    );
    expect(allowed).toBeGreaterThan(0);
    expect(allowed).toBeLessThan(calls);
  }
});
