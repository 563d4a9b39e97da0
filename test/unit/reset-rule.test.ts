/**
 * The Reset rule of SPEC §3, as properties over random call sequences and clock steps, for both
 * algorithms on the memory store (the Redis store is held to the same decisions by
 * `redis-matches-memory-store.test.ts`, and to the rule itself by `reset-rule-redis.test.ts`):
 *
 * 1. while Remaining > 0, Reset is at most ⌈now⌉ + the reported window's length;
 * 2. when Remaining is 0 (the call that used the last unit, every 429, a peek of a spent window),
 *    a call made at Reset is admitted;
 * 3. a peek (`GET /rate_limit`) and a call made right after it report the same Reset, unless that
 *    call used the last unit.
 *
 * Classes mix in calendar windows (SPEC §19: `minute` and `hour`, at +00:00, +09:00 and -05:30),
 * whose Reset is always the start of the next period, Remaining or not; 2 and 3 hold for them too.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../gateway/base/clock.js";
import { periodBounds } from "../../gateway/ratelimit/calendar.js";
import type { Algorithm, Decision, LimitPolicy, WindowSpec } from "../../gateway/ratelimit/limiter.js";
import { MemoryStore } from "../../gateway/ratelimit/memory-store.js";

const T0 = 1_700_000_000_000;

interface Step {
  advanceMs: number;
  count: boolean;
}

const windowArb: fc.Arbitrary<WindowSpec> = fc.oneof(
  fc.record({ limit: fc.integer({ min: 1, max: 6 }), windowS: fc.constantFrom(1, 2, 5, 60) }),
  fc.record({
    limit: fc.integer({ min: 1, max: 6 }),
    period: fc.constantFrom("minute" as const, "hour" as const),
    offsetMs: fc.constantFrom(0, 9 * 3_600_000, -19_800_000),
  }),
);
const policyArb = (algorithm: Algorithm) =>
  fc
    .uniqueArray(windowArb, { minLength: 1, maxLength: 2, selector: (w) => w.windowS ?? w.period })
    .map((windows): LimitPolicy => ({ className: "c", algorithm, mode: "enforce", windows }));
const stepsArb = fc.array(
  fc.record({
    advanceMs: fc.oneof(
      fc.constant(0),
      fc.integer({ min: 1, max: 999 }),
      fc.integer({ min: 1000, max: 130_000 }),
    ),
    count: fc.boolean(),
  }),
  { minLength: 1, maxLength: 30 },
);

/** A store that has seen `steps` (state after the last one), and the time it is at. */
function replay(policy: LimitPolicy, steps: readonly Step[]): { store: MemoryStore; clock: ManualClock } {
  const clock = new ManualClock(T0);
  const store = new MemoryStore({ clock, maxKeys: 16 });
  for (const s of steps) {
    clock.advance(s.advanceMs);
    store.decide("k", policy, s.count);
  }
  return { store, clock };
}

const resetS = (d: Decision) => Math.ceil(d.resetAtMs / 1000);

describe.each(["sliding_window", "sliding_log"] as const)("the Reset rule on %s", (algorithm) => {
  it("keeps Reset within one window while calls remain, and admits a call made at Reset after 0", () => {
    fc.assert(
      fc.property(policyArb(algorithm), stepsArb, (policy, steps) => {
        const clock = new ManualClock(T0);
        const store = new MemoryStore({ clock, maxKeys: 16 });
        steps.forEach((step, i) => {
          clock.advance(step.advanceMs);
          const d = store.decide("k", policy, step.count);
          const w = policy.windows[d.windowIndex]!;
          if (w.period !== undefined) {
            const end = periodBounds(clock.nowMs(), w.period, w.offsetMs, { startMs: 0, endMs: 0 }).endMs;
            expect(d.resetAtMs).toBe(end);
          }
          if (d.remaining > 0) {
            if (w.period === undefined)
              expect(resetS(d)).toBeLessThanOrEqual(Math.ceil(clock.nowMs() / 1000) + w.windowS);
          } else {
            const fork = replay(policy, steps.slice(0, i + 1));
            fork.clock.set(resetS(d) * 1000);
            expect(fork.store.decide("k", policy, true).allowed).toBe(true);
          }
        });
      }),
      { numRuns: 300 },
    );
  });

  it("reports the same Reset to a peek and to the call right after it, unless it used the last unit", () => {
    fc.assert(
      fc.property(policyArb(algorithm), stepsArb, (policy, steps) => {
        const { store } = replay(policy, steps);
        const peek = store.decide("k", policy, false);
        const call = store.decide("k", policy, true);
        if (call.allowed && call.remaining > 0) expect(resetS(call)).toBe(resetS(peek));
        if (peek.remaining === 0) expect(call.allowed).toBe(false);
        if (!call.allowed) expect(resetS(call)).toBe(resetS(peek));
      }),
      { numRuns: 300 },
    );
  });

  it("answers a fresh identity's first call with a Reset at most one window ahead", () => {
    const clock = new ManualClock(T0 + 12_345);
    const store = new MemoryStore({ clock, maxKeys: 16 });
    const d = store.decide(
      "fresh",
      { className: "c", algorithm, mode: "enforce", windows: [{ limit: 5000, windowS: 3600 }] },
      true,
    );
    expect(d.remaining).toBe(4999);
    expect(resetS(d) - Math.ceil(clock.nowMs() / 1000)).toBeLessThanOrEqual(3600);
  });
});
