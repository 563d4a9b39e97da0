/**
 * SPEC §16 outlier detection on an injected clock: consecutive failures eject, the k-th ejection
 * lasts base × k (at most 300 s), k falls by one per 5 × base without an ejection, a success resets
 * the count, max_ejection_percent holds (at least one allowed from two endpoints, never the only
 * endpoint), and un-ejection is lazy (isEjected, refresh) with onChange told of every change.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { BalancedEndpoint } from "../../gateway/proxy/balancing/balancer.js";
import {
  MAX_EJECTION_MS,
  OutlierDetector,
  type OutlierSettings,
} from "../../gateway/proxy/balancing/outlier-detector.js";

function endpoints(n: number): BalancedEndpoint[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `10.0.0.${i + 1}:3000`,
    weight: 1,
    available: true,
    inFlight: 0,
  }));
}

/** A detector on a clock the test moves, recording every onChange. */
function setup(n: number, settings: Partial<OutlierSettings> = {}) {
  const clock = { t: 1_000_000 };
  const changes: [number, boolean][] = [];
  const detector = new OutlierDetector(
    endpoints(n),
    { consecutiveFailures: 5, baseEjectionMs: 30_000, maxEjectionPercent: 50, ...settings },
    { monotonicMs: () => clock.t },
    (i, ejected) => changes.push([i, ejected]),
  );
  const fail = (i: number, times: number): void => {
    for (let k = 0; k < times; k++) detector.failure(i);
  };
  return { clock, changes, detector, fail };
}

/** Ejects endpoint i now and returns how long the ejection lasts (ms), leaving the clock at its end. */
function ejectionLength(s: ReturnType<typeof setup>, i: number): number {
  s.fail(i, 5);
  expect(s.detector.isEjected(i)).toBe(true);
  const until = s.detector.nextUnejectionAt();
  expect(s.detector.isEjected(i)).toBe(true);
  const length = until - s.clock.t;
  s.clock.t = until - 1;
  expect(s.detector.isEjected(i)).toBe(true);
  s.clock.t = until;
  expect(s.detector.isEjected(i)).toBe(false);
  return length;
}

describe("OutlierDetector", () => {
  it("ejects after 5 consecutive failures for base_ejection_ms, telling onChange both ways", () => {
    const s = setup(3);
    s.fail(0, 4);
    expect(s.detector.isEjected(0)).toBe(false);
    expect(s.changes).toEqual([]);
    s.fail(0, 1);
    expect(s.changes).toEqual([[0, true]]);
    expect(s.detector.nextUnejectionAt()).toBe(s.clock.t + 30_000);
    s.clock.t += 29_999;
    expect(s.detector.isEjected(0)).toBe(true);
    s.clock.t += 1;
    expect(s.detector.isEjected(0)).toBe(false);
    expect(s.changes).toEqual([
      [0, true],
      [0, false],
    ]);
    expect(s.detector.ejectionCount(0)).toBe(1);
    expect(s.detector.nextUnejectionAt()).toBe(Infinity);
  });

  it("counts only consecutive failures: a success starts the count again", () => {
    const s = setup(2);
    s.fail(1, 4);
    s.detector.success(1);
    s.fail(1, 4);
    expect(s.detector.isEjected(1)).toBe(false);
    s.fail(1, 1);
    expect(s.detector.isEjected(1)).toBe(true);
  });

  it("lengthens each ejection in a row by base (base x k), up to 300 s", () => {
    const s = setup(2, { baseEjectionMs: 100_000 });
    expect([1, 2, 3, 4].map(() => ejectionLength(s, 0))).toEqual([100_000, 200_000, 300_000, 300_000]);
    expect(MAX_EJECTION_MS).toBe(300_000);
    expect(s.detector.ejectionCount(0)).toBe(4);
  });

  it("lowers k by one for every 5 x base the endpoint goes without an ejection", () => {
    const s = setup(2, { baseEjectionMs: 1_000 });
    expect([1, 2, 3].map(() => ejectionLength(s, 0))).toEqual([1_000, 2_000, 3_000]); // k = 3
    s.clock.t += 4_999; // not yet 5 x base: k stays 3, so the next is the 4th in a row
    expect(ejectionLength(s, 0)).toBe(4_000);
    s.clock.t += 5_000; // k 4 -> 3, then 4 again
    expect(ejectionLength(s, 0)).toBe(4_000);
    s.clock.t += 15_000; // k 4 -> 1, then 2
    expect(ejectionLength(s, 0)).toBe(2_000);
    s.clock.t += 60_000; // k cannot go below 0
    expect(ejectionLength(s, 0)).toBe(1_000);
  });

  it("counts the time without an ejection from when the last one was due to end, however late it is noticed", () => {
    const s = setup(2, { baseEjectionMs: 1_000 });
    s.fail(0, 5);
    s.clock.t += 6_000; // ended at +1000, noticed 5000 ms later: 5 x base have passed since
    expect(s.detector.isEjected(0)).toBe(false);
    s.fail(0, 5);
    expect(s.detector.nextUnejectionAt() - s.clock.t).toBe(1_000); // k 1 -> 0, then 1
  });

  it("ignores failures while ejected, and needs a full run of failures again after returning", () => {
    const s = setup(2, { baseEjectionMs: 1_000 });
    s.fail(0, 5);
    s.fail(0, 20); // in-flight calls ending, or panic routing
    expect(s.detector.ejectionCount(0)).toBe(1);
    s.clock.t += 1_000;
    s.fail(0, 4); // the first of these notices the return
    expect(s.detector.isEjected(0)).toBe(false);
    s.fail(0, 1);
    expect(s.detector.isEjected(0)).toBe(true);
  });

  it("never ejects more than max_ejection_percent, but always one of two or more endpoints", () => {
    const four = setup(4, { maxEjectionPercent: 50 });
    for (const i of [0, 1, 2]) four.fail(i, 5);
    expect([0, 1, 2].map((i) => four.detector.isEjected(i))).toEqual([true, true, false]);
    expect(four.detector.ejectedCount()).toBe(2);

    const two = setup(2, { maxEjectionPercent: 10, baseEjectionMs: 1_000 });
    two.fail(0, 5);
    two.fail(1, 5);
    expect([two.detector.isEjected(0), two.detector.isEjected(1)]).toEqual([true, false]);
    two.clock.t += 1_000;
    two.fail(1, 4); // the refused attempt reset endpoint 1's count (as Envoy does)
    expect(two.detector.isEjected(1)).toBe(false);
    two.fail(1, 1); // endpoint 0's ejection has ended, so this one is allowed
    expect([two.detector.isEjected(0), two.detector.isEjected(1)]).toEqual([false, true]);
  });

  it("never ejects the only endpoint of an upstream, and does nothing with consecutive_failures 0", () => {
    const one = setup(1, { maxEjectionPercent: 100 });
    one.fail(0, 100);
    expect(one.detector.isEjected(0)).toBe(false);
    const off = setup(3, { consecutiveFailures: 0 });
    off.fail(0, 100);
    expect(off.detector.isEjected(0)).toBe(false);
    expect(off.changes).toEqual([]);
  });

  it("refresh ends every ejection that is due, telling onChange once per endpoint", () => {
    const s = setup(4, { baseEjectionMs: 1_000, maxEjectionPercent: 100 });
    s.fail(0, 5);
    s.clock.t += 500;
    s.fail(1, 5);
    s.fail(2, 5);
    s.clock.t += 500;
    s.detector.refresh();
    expect(s.changes.filter(([, ejected]) => !ejected)).toEqual([[0, false]]);
    expect(s.detector.nextUnejectionAt()).toBe(s.clock.t + 500);
    s.clock.t += 500;
    s.detector.refresh();
    s.detector.refresh();
    expect(s.changes.filter(([, ejected]) => !ejected)).toEqual([
      [0, false],
      [1, false],
      [2, false],
    ]);
    expect(s.detector.ejectedCount()).toBe(0);
  });

  it("keeps every bound under any sequence of failures, successes and time (property)", () => {
    const event = fc.oneof(
      fc.record({ kind: fc.constant("fail" as const), i: fc.nat(), times: fc.integer({ min: 1, max: 6 }) }),
      fc.record({ kind: fc.constant("success" as const), i: fc.nat() }),
      fc.record({ kind: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 400_000 }) }),
      fc.record({ kind: fc.constant("refresh" as const) }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 0, max: 100 }),
        fc.integer({ min: 1, max: 200_000 }),
        fc.array(event, { maxLength: 60 }),
        (n, maxEjectionPercent, baseEjectionMs, events) => {
          const s = setup(n, { consecutiveFailures: 3, maxEjectionPercent, baseEjectionMs });
          const ejected = new Set<number>(); // as told through onChange
          let told = 0;
          const limit = n === 1 ? 0 : Math.max(1, Math.floor((n * maxEjectionPercent) / 100));
          for (const e of events) {
            if (e.kind === "fail") s.fail(e.i % n, e.times);
            else if (e.kind === "success") s.detector.success(e.i % n);
            else if (e.kind === "wait") s.clock.t += e.ms;
            else s.detector.refresh();
            for (; told < s.changes.length; told++) {
              const [i, on] = s.changes[told]!;
              expect(ejected.has(i)).toBe(!on); // changes alternate per endpoint
              if (on) ejected.add(i);
              else ejected.delete(i);
            }
            expect(ejected.size).toBeLessThanOrEqual(limit);
            expect(s.detector.ejectedCount()).toBe(ejected.size);
            if (ejected.size > 0) {
              const left = s.detector.nextUnejectionAt() - s.clock.t;
              expect(left).toBeLessThanOrEqual(MAX_EJECTION_MS);
            }
          }
        },
      ),
    );
  });
});
