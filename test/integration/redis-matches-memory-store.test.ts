/**
 * The Lua scripts implement the same algorithms as `sliding.ts` (SPEC §4: "the same semantics"):
 * a bursty sequence of calls against Redis, replayed into the memory store at the Redis `TIME` each
 * decision reports, gives identical decisions, remaining counts and resets. Also with a calendar
 * window (SPEC §19, `calendar.lua` against `calendar.ts`) beside a sliding one.
 */
import { expect, it } from "vitest";
import { ManualClock } from "../../gateway/base/clock.js";
import type { Algorithm, Decision, LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { MemoryStore } from "../../gateway/ratelimit/memory-store.js";
import { useRedisStore } from "../helpers/redis-store-fixture.js";
import { prng } from "../helpers/prng.js";

const redis = useRedisStore("parity");

const pick = (d: Decision) => ({
  allowed: d.allowed,
  limit: d.limit,
  remaining: d.remaining,
  resetAtMs: d.resetAtMs,
  windowIndex: d.windowIndex,
});

async function replay(
  algorithm: Algorithm,
  seed: number,
  calendar = false,
): Promise<{ calls: number; allowed: number }> {
  const policy: LimitPolicy = {
    className: calendar ? "q" : "p",
    algorithm,
    mode: "enforce",
    windows: [
      { limit: 6, windowS: 1 },
      // +05:30: a minute at a half-hour offset; 10 calls a minute run out within the trace.
      calendar ? { limit: 10, period: "minute", offsetMs: 330 * 60_000 } : { limit: 10, windowS: 2 },
    ],
  };
  const clock = new ManualClock(0);
  const memory = new MemoryStore({ clock });
  const rnd = prng(seed);
  const key = `u:${algorithm}:${calendar}`;
  let calls = 0;
  let allowed = 0;
  const end = Date.now() + 3000;
  while (Date.now() < end) {
    const burst = 1 + Math.floor(rnd() * 5);
    for (let i = 0; i < burst; i++) {
      const count = rnd() > 0.1;
      const r = count ? await redis.store.consume(key, policy) : await redis.store.peek(key, policy);
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
  const names = ["sliding_window", "sliding_log", "sliding_window + minute", "sliding_log + minute"];
  const results = await Promise.all([
    replay("sliding_window", 42),
    replay("sliding_log", 7),
    replay("sliding_window", 5, true),
    replay("sliding_log", 11, true),
  ]);
  for (const [i, { calls, allowed }] of results.entries()) {
    console.log(`${names[i]!}: ${calls} calls, ${allowed} admitted, all identical`);
    expect(allowed).toBeGreaterThan(0);
    expect(allowed).toBeLessThan(calls);
  }
});
