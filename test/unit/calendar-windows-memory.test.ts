/**
 * SPEC §19 on the memory store (the default store, and the failover's while Redis is down), on an
 * injected clock: a calendar window is an exact counter per period; rejected calls are not
 * counted; Reset is the next period's start whether or not anything remains; a new period starts
 * from zero; it sits beside sliding windows of either algorithm and is reported like any window;
 * failing open divides its limit like any other.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../gateway/base/clock.js";
import type { Algorithm, LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { MemoryStore } from "../../gateway/ratelimit/memory-store.js";

const NINE_H = 9 * 3_600_000;
/** 2026-01-31 23:59:50 at +09:00. */
const BEFORE_FEB = Date.UTC(2026, 0, 31, 14, 59, 50);
const FEB_START = Date.UTC(2026, 0, 31, 15); // 2026-02-01 00:00 +09:00
const MAR_START = Date.UTC(2026, 1, 28, 15); // 2026-03-01 00:00 +09:00

const monthly = (algorithm: Algorithm, limit: number, sliding?: [number, number]): LimitPolicy => ({
  className: "read",
  algorithm,
  mode: "enforce",
  windows: [
    ...(sliding === undefined ? [] : [{ limit: sliding[0], windowS: sliding[1] }]),
    { limit, period: "month" as const, offsetMs: NINE_H },
  ],
});

describe.each(["sliding_window", "sliding_log"] as const)("a month window in a %s class", (algorithm) => {
  it("admits exactly the limit per month, Reset the next month's start, rejections not counted", () => {
    const clock = new ManualClock(BEFORE_FEB);
    const store = new MemoryStore({ clock });
    const p = monthly(algorithm, 3);
    const jan = [1, 2, 3, 4, 5].map(() => store.decide("sub:a", p, true));
    expect(jan.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
      [false, 0],
    ]);
    expect(new Set(jan.map((d) => d.resetAtMs))).toEqual(new Set([FEB_START]));
    clock.set(FEB_START - 1);
    expect(store.decide("sub:a", p, true).allowed).toBe(false);
    clock.set(FEB_START);
    const feb = store.decide("sub:a", p, true);
    expect([feb.allowed, feb.remaining, feb.resetAtMs]).toEqual([true, 2, MAR_START]);
    // A peek reads what is left now; a fresh identity has the whole month.
    expect(store.decide("sub:a", p, false).remaining).toBe(2);
    expect(store.decide("sub:b", p, false)).toMatchObject({
      allowed: true,
      remaining: 3,
      resetAtMs: MAR_START,
    });
  });

  it("beside a sliding window: admitted only when both have room, reported as any window", () => {
    const clock = new ManualClock(FEB_START + 5_000);
    const store = new MemoryStore({ clock });
    const p = monthly(algorithm, 4, [2, 10]);
    const a = store.decide("sub:a", p, true);
    // 1 left of 2 per 10 s, 3 of 4 per month: the sliding window is closer to exhaustion.
    expect([a.windowIndex, a.remaining]).toEqual([0, 1]);
    store.decide("sub:a", p, true);
    const refused = store.decide("sub:a", p, true);
    expect([refused.allowed, refused.windowIndex]).toEqual([false, 0]);
    clock.advance(20_000);
    store.decide("sub:a", p, true);
    const last = store.decide("sub:a", p, true);
    // Both windows are at 0: the one that frees last (the month) is reported.
    expect([last.allowed, last.remaining, last.windowIndex, last.resetAtMs]).toEqual([true, 0, 1, MAR_START]);
    clock.advance(20_000);
    const over = store.decide("sub:a", p, true);
    expect([over.allowed, over.windowIndex, over.resetAtMs]).toEqual([false, 1, MAR_START]);
  });
});

it("a class that changes algorithm or plan keeps its calendar count (one key per class and period)", () => {
  const clock = new ManualClock(FEB_START + 1000);
  const store = new MemoryStore({ clock });
  store.decide("sub:a", monthly("sliding_window", 3), true);
  store.decide("sub:a", monthly("sliding_window", 3), true);
  const pro = store.decide("sub:a", monthly("sliding_log", 10, [100, 60]), true);
  expect(pro.remaining).toBe(7);
});

it("failing open divides a calendar limit by expected_replicas, as any other", () => {
  const clock = new ManualClock(FEB_START + 1000);
  const store = new MemoryStore({ clock, limitDivisor: 3 });
  const p = monthly("sliding_window", 10); // ceil(10 / 3) = 4 per replica
  const seen = [1, 2, 3, 4, 5].map(() => store.decide("sub:a", p, true).allowed);
  expect(seen).toEqual([true, true, true, true, false]);
});

it("weeks start on Monday 00:00 and days at midnight of the offset", () => {
  // 2026-03-01 is a Sunday; at -05:00 Monday 2026-03-02 00:00 is 05:00Z.
  const off = -5 * 3_600_000;
  const clock = new ManualClock(Date.UTC(2026, 2, 2, 4, 59, 59));
  const store = new MemoryStore({ clock });
  const p = (period: "week" | "day"): LimitPolicy => ({
    className: period,
    algorithm: "sliding_window",
    mode: "enforce",
    windows: [{ limit: 1, period, offsetMs: off }],
  });
  expect(store.decide("k", p("week"), true).resetAtMs).toBe(Date.UTC(2026, 2, 2, 5));
  expect(store.decide("k", p("day"), true).resetAtMs).toBe(Date.UTC(2026, 2, 2, 5));
  clock.set(Date.UTC(2026, 2, 2, 5));
  expect(store.decide("k", p("week"), true)).toMatchObject({
    allowed: true,
    resetAtMs: Date.UTC(2026, 2, 9, 5),
  });
  expect(store.decide("k", p("day"), true)).toMatchObject({
    allowed: true,
    resetAtMs: Date.UTC(2026, 2, 3, 5),
  });
});
