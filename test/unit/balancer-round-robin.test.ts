/**
 * SPEC §16 `round_robin`: smooth weighted round robin (nginx's `ngx_http_upstream_get_peer`).
 * Properties over random weights and random changes of availability: exact counts over every run of
 * `sum(weights)` picks among the same available endpoints, interleaving within each cycle, no
 * unavailable endpoint ever chosen, and panic routing over all endpoints.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createBalancer, type BalancedEndpoint } from "../../gateway/proxy/balancing/balancer.js";

function endpoints(weights: readonly number[]): BalancedEndpoint[] {
  return weights.map((weight, i) => ({ name: `10.0.0.${i + 1}:3000`, weight, available: true, inFlight: 0 }));
}

/** Picks `count` times; never -1 in these tests, so the caller's set is non-empty. */
function run(pick: () => number, count: number): number[] {
  return Array.from({ length: count }, pick);
}

/** A phase: which endpoints are available, and for how many cycles of their weight sum. */
const phases = (n: number) =>
  fc.array(
    fc.record({
      mask: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
      cycles: fc.integer({ min: 1, max: 3 }),
    }),
    {
      minLength: 1,
      maxLength: 5,
    },
  );

const weightsAndPhases = fc
  .array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 7 })
  .chain((weights) => fc.tuple(fc.constant(weights), phases(weights.length)));

describe("round_robin (smooth weighted, nginx)", () => {
  it("gives nginx's sequence for weights 5, 1, 1: a a b a c a a, then again", () => {
    const b = createBalancer("round_robin", endpoints([5, 1, 1]));
    const names = run(() => b.pick(undefined, false), 14)
      .map((i) => "abc"[i])
      .join("");
    expect(names).toBe("aabacaaaabacaa");
  });

  it("picks each available endpoint exactly `weight` times in every run of sum(weights) picks", () => {
    fc.assert(
      fc.property(weightsAndPhases, ([weights, plan]) => {
        const eps = endpoints(weights);
        const b = createBalancer("round_robin", eps);
        for (const { mask, cycles } of plan) {
          mask.forEach((on, i) => (eps[i]!.available = on));
          const set = weights.flatMap((_, i) => (mask[i] ? [i] : []));
          if (set.length === 0) {
            expect(b.pick(undefined, false)).toBe(-1);
            continue;
          }
          const total = set.reduce((s, i) => s + weights[i]!, 0);
          const picks = run(() => b.pick(undefined, false), total * cycles + total - 1);
          for (const p of picks) expect(mask[p]).toBe(true);
          for (let start = 0; start + total <= picks.length; start++) {
            const counts = new Map<number, number>();
            for (const p of picks.slice(start, start + total)) counts.set(p, (counts.get(p) ?? 0) + 1);
            for (const i of set) expect(counts.get(i), `window at ${start}`).toBe(weights[i]);
          }
        }
      }),
    );
  });

  it("interleaves: within a cycle no endpoint of weight w >= 2 is picked w times in a row while another is available", () => {
    fc.assert(
      fc.property(weightsAndPhases, ([weights, plan]) => {
        const eps = endpoints(weights);
        const b = createBalancer("round_robin", eps);
        for (const { mask } of plan) {
          mask.forEach((on, i) => (eps[i]!.available = on));
          const set = weights.flatMap((_, i) => (mask[i] ? [i] : []));
          if (set.length < 2) {
            run(() => b.pick(undefined, false), 3); // keeps every later cycle aligned
            continue;
          }
          const total = set.reduce((s, i) => s + weights[i]!, 0);
          const cycle = run(() => b.pick(undefined, false), total);
          let streak = 1;
          for (let k = 1; k < cycle.length; k++) {
            streak = cycle[k] === cycle[k - 1] ? streak + 1 : 1;
            const w = weights[cycle[k]!]!;
            if (w >= 2) expect(streak, `weights ${weights} mask ${mask}: ${cycle}`).toBeLessThan(w);
          }
        }
      }),
    );
  });

  it("with no endpoint available answers -1, and the panic retry spreads over all of them by weight", () => {
    const eps = endpoints([2, 1, 1]);
    const b = createBalancer("round_robin", eps);
    for (const e of eps) e.available = false;
    const picks: number[] = [];
    for (let k = 0; k < 8; k++) {
      expect(b.pick(undefined, false)).toBe(-1);
      picks.push(b.pick(undefined, true));
    }
    // The -1 between panic picks must not restart the cycle, or endpoint 0 would take every call.
    expect(picks).toEqual([0, 1, 2, 0, 0, 1, 2, 0]);
  });

  it("treats every endpoint as available under panic even when some are", () => {
    const eps = endpoints([1, 1, 1]);
    eps[1]!.available = false;
    const b = createBalancer("round_robin", eps);
    expect(new Set(run(() => b.pick(undefined, true), 3))).toEqual(new Set([0, 1, 2]));
  });

  it("always answers the only endpoint of a one-endpoint upstream", () => {
    const b = createBalancer("round_robin", endpoints([3]));
    expect(run(() => b.pick(undefined, false), 5)).toEqual([0, 0, 0, 0, 0]);
  });
});

describe("createBalancer", () => {
  it("refuses an empty endpoint list and weights that are not positive integers", () => {
    expect(() => createBalancer("round_robin", [])).toThrow(RangeError);
    for (const weight of [0, -1, 1.5, Number.NaN])
      expect(() => createBalancer("least_request", endpoints([1, weight]))).toThrow(
        /weight must be a positive integer/,
      );
  });
});
