/**
 * SPEC §19 with `expected_replicas`: the fallback counts on from the count last seen, leaving this
 * replica its share of what is left of the quota; a count of an earlier period is not used.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../gateway/base/clock.js";
import { periodBounds } from "../../gateway/ratelimit/calendar.js";
import type { Decision, LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { MemoryStore } from "../../gateway/ratelimit/memory-store.js";
import { SpentQuotas } from "../../gateway/ratelimit/spent-quotas.js";

const policy: LimitPolicy = {
  className: "read",
  algorithm: "sliding_window",
  mode: "enforce",
  windows: [
    { limit: 100, windowS: 60 },
    { limit: 10, period: "day", offsetMs: 0 },
  ],
};
const NOW = Date.UTC(2026, 2, 10, 12);

/** What the Redis store returns after the caller's `count`-th call of the day. */
function seenAt(nowMs: number, count: number): Decision {
  return {
    allowed: true,
    windowIndex: 1,
    limit: 10,
    remaining: 10 - count,
    resetAtMs: 0,
    nowMs,
    degraded: false,
    calendarCounts: [1, count],
  };
}

async function admitted(store: MemoryStore, key: string): Promise<number> {
  let n = 0;
  for (let i = 0; i < 20; i++) if ((await store.consume(key, policy)).allowed) n++;
  return n;
}

describe("SpentQuotas", () => {
  it("with expected_replicas 2, 6 of 10 seen leaves this replica 2 of its 5", async () => {
    const clock = new ManualClock(NOW);
    const spent = new SpentQuotas({ limitDivisor: 2 });
    const fallback = new MemoryStore({ clock, limitDivisor: 2 });
    spent.record("sub:a", policy, seenAt(NOW, 6));
    spent.seed("sub:a", policy, null, fallback, clock.nowMs());
    expect(await admitted(fallback, "sub:a")).toBe(2);
  });

  it("a count seen yesterday is not carried into today", async () => {
    const clock = new ManualClock(NOW);
    const spent = new SpentQuotas();
    const fallback = new MemoryStore({ clock });
    spent.record("sub:a", policy, seenAt(NOW - 86_400_000, 10));
    spent.seed("sub:a", policy, null, fallback, clock.nowMs());
    expect(await admitted(fallback, "sub:a")).toBe(10);
  });

  it("seeding twice never lowers what the fallback already counted", async () => {
    const clock = new ManualClock(NOW);
    const spent = new SpentQuotas();
    const fallback = new MemoryStore({ clock });
    spent.record("sub:a", policy, seenAt(NOW, 4));
    spent.seed("sub:a", policy, null, fallback, NOW);
    await fallback.consume("sub:a", policy); // 5 counted locally
    spent.seed("sub:a", policy, null, fallback, NOW);
    expect(await admitted(fallback, "sub:a")).toBe(5);
    const end = periodBounds(NOW, "day", 0, { startMs: 0, endMs: 0 }).endMs;
    expect((await fallback.peek("sub:a", policy)).resetAtMs).toBe(end);
  });
});
