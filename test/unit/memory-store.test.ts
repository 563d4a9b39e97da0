/**
 * The memory store's sliding windows (SPEC §4) on an injected clock: admission, rejected calls not
 * counted, the reported window, reset arithmetic, peek, the failover divisor and the LRU bound.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../gateway/base/clock.js";
import type { LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { MemoryStore } from "../../gateway/ratelimit/memory-store.js";
import { counterFreeAt } from "../../gateway/ratelimit/sliding.js";

const T0 = Date.UTC(2026, 0, 1); // a multiple of every window length
const policy = (algorithm: LimitPolicy["algorithm"], windows: [number, number][]): LimitPolicy => ({
  className: "c",
  algorithm,
  mode: "enforce",
  windows: windows.map(([limit, windowS]) => ({ limit, windowS })),
});

describe.each(["sliding_window", "sliding_log"] as const)("%s", (algorithm) => {
  it("admits exactly the limit, counts down remaining, and does not count rejections", async () => {
    const clock = new ManualClock(T0 + 1000);
    const store = new MemoryStore({ clock });
    const p = policy(algorithm, [[3, 10]]);
    const seen = [];
    for (let i = 0; i < 6; i++) seen.push(await store.consume("k", p));
    expect(seen.map((d) => d.allowed)).toEqual([true, true, true, false, false, false]);
    expect(seen.map((d) => d.remaining)).toEqual([2, 1, 0, 0, 0, 0]);
    // Whatever the algorithm, by two windows later everything has expired.
    clock.set(T0 + 21_000);
    const again = [];
    for (let i = 0; i < 4; i++) again.push((await store.consume("k", p)).allowed);
    expect(again).toEqual([true, true, true, false]);
  });

  it("a rejected call's resetAtMs is the first instant the call is admitted", async () => {
    const clock = new ManualClock(T0 + 2500);
    const store = new MemoryStore({ clock });
    const p = policy(algorithm, [[4, 10]]);
    for (let i = 0; i < 4; i++) await store.consume("k", p);
    const rejected = await store.consume("k", p);
    expect(rejected.allowed).toBe(false);
    clock.set(rejected.resetAtMs - 1);
    expect((await store.consume("k", p)).allowed).toBe(false);
    clock.set(rejected.resetAtMs);
    expect((await store.consume("k", p)).allowed).toBe(true);
  });

  it("admits only when every window has room and reports the tighter one", async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore({ clock });
    const p = policy(algorithm, [
      [100, 3600],
      [2, 1],
    ]);
    const a = await store.consume("k", p);
    expect(a).toMatchObject({ allowed: true, limit: 2, remaining: 1 });
    await store.consume("k", p);
    const c = await store.consume("k", p);
    expect(c).toMatchObject({ allowed: false, limit: 2, remaining: 0 });
    clock.advance(2000);
    const d = await store.consume("k", p);
    // 3 of 100 used in the hour window (the rejection not counted), 1 of 2 in the second.
    expect(d).toMatchObject({ allowed: true, limit: 2, remaining: 1 });
    clock.advance(2000);
    const peek = await store.peek("k", policy(algorithm, [[100, 3600]]));
    // Counts belong to the class and the window length (as in Redis), not to the window list: the
    // hour window's 3 calls are still there when the class loses its second window.
    expect(peek.remaining).toBe(97);
  });

  it("peek reports what is left without counting", async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore({ clock });
    const p = policy(algorithm, [[5, 60]]);
    await store.consume("k", p);
    expect((await store.peek("k", p)).remaining).toBe(4);
    expect((await store.peek("k", p)).remaining).toBe(4);
    expect((await store.consume("k", p)).remaining).toBe(3);
  });

  it("divides limits by expected replicas (failing open), rounding up", async () => {
    const store = new MemoryStore({ clock: new ManualClock(T0), limitDivisor: 3 });
    const p = policy(algorithm, [[10, 60]]);
    const results = [];
    for (let i = 0; i < 6; i++) results.push(await store.consume("k", p));
    expect(results[0]!.limit).toBe(4);
    expect(results.filter((d) => d.allowed).length).toBe(4);
  });

  it("keeps identities apart and bounds the number of keys", async () => {
    const store = new MemoryStore({ clock: new ManualClock(T0), maxKeys: 10 });
    const p = policy(algorithm, [[1, 60]]);
    for (let i = 0; i < 50; i++) expect((await store.consume(`id-${i}`, p)).allowed).toBe(true);
    expect(store.size).toBe(10);
  });
});

describe("a class redefined by a reload", () => {
  it("starts fresh state when the algorithm or the windows change, never reads the old shape", async () => {
    const store = new MemoryStore({ clock: new ManualClock(T0 + 1000) });
    const before = policy("sliding_window", [[3, 10]]);
    for (let i = 0; i < 3; i++) await store.consume("k", before);
    expect((await store.consume("k", before)).allowed).toBe(false);
    // Same class name, other algorithm (the state of a sliding_window key has no log).
    const asLog = policy("sliding_log", [[3, 10]]);
    expect(await store.consume("k", asLog)).toMatchObject({ allowed: true, remaining: 2 });
    // Same name and algorithm, another window length: the old counters do not carry over.
    const longer = policy("sliding_window", [[3, 60]]);
    expect(await store.consume("k", longer)).toMatchObject({ allowed: true, remaining: 2 });
    // The original definition still finds its own state.
    expect((await store.consume("k", before)).allowed).toBe(false);
  });
});

describe("sliding_window estimate", () => {
  it("weights the previous window by the part of it still inside the sliding window", async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore({ clock });
    const p = policy("sliding_window", [[10, 10]]);
    for (let i = 0; i < 10; i++) await store.consume("k", p);
    clock.set(T0 + 12_500); // 25% into the next window: estimate 10 * 0.75 = 7.5
    const d = await store.consume("k", p);
    expect(d).toMatchObject({ allowed: true, remaining: 1 }); // 10 - 8.5 = 1.5 -> 1
    expect(await store.consume("k", p)).toMatchObject({ allowed: true, remaining: 0 }); // 9.5
    expect((await store.consume("k", p)).allowed).toBe(false); // 10.5 > 10
  });

  it("counterFreeAt solves the estimate for the target count", () => {
    const s = { startMs: 0, prev: 10, curr: 2 };
    // 10 * (1 - t/1000) + 2 <= 6  ->  t >= 600
    expect(counterFreeAt(s, 100, 1000, 6)).toBe(600);
    // curr above target: next window, 2 * (1 - (t-1000)/1000) <= 1 -> t >= 1500
    expect(counterFreeAt(s, 100, 1000, 1)).toBe(1500);
    expect(counterFreeAt(s, 100, 1000, 20)).toBe(100);
  });
});
