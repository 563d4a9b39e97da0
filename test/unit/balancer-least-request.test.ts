/**
 * SPEC §16 `least_request`. Equal weights: power of two choices on requests in flight (Envoy's
 * `LeastRequestLoadBalancer`, N_CHOICES with 2, but two different endpoints); with an injected
 * random source the two samples are known (the first is `floor(r1 * n)`-th available endpoint in
 * index order, the second `floor(r2 * (n - 1))`-th of the others), so each pick can be checked.
 * Unequal weights: Envoy's weighted least request, picks following `weight / (in flight + 1)` on
 * an earliest-deadline-first schedule, so an idle pool is spread exactly in the weights' ratio.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createBalancer, type BalancedEndpoint } from "../../gateway/proxy/balancing/balancer.js";

interface Shape {
  weight: number;
  inFlight: number;
  available: boolean;
}

function endpoints(shapes: readonly Shape[]): BalancedEndpoint[] {
  return shapes.map((s, i) => ({ name: `10.0.0.${i + 1}:3000`, ...s }));
}

const load = (e: BalancedEndpoint): number => e.inFlight / e.weight;

/** Pools of one weight (the power of two choices serves those). */
const shapes = fc.integer({ min: 1, max: 10 }).chain((weight) =>
  fc.array(
    fc.record({ weight: fc.constant(weight), inFlight: fc.nat({ max: 50 }), available: fc.boolean() }),
    {
      minLength: 1,
      maxLength: 8,
    },
  ),
);
/** Uniform in [0, 1), including 0 and values a hair below 1. */
const unit = fc.oneof(
  fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
  fc.constant(0),
  fc.constant(1 - Number.EPSILON),
);

describe("least_request (power of two choices)", () => {
  it("picks the less loaded (in flight / weight) of two different available endpoints, never an unavailable one", () => {
    fc.assert(
      fc.property(
        shapes,
        fc.array(unit, { minLength: 2, maxLength: 2 }),
        fc.boolean(),
        (s, [r1, r2], panic) => {
          const eps = endpoints(s);
          const draws = [r1!, r2!];
          const b = createBalancer("least_request", eps, () => draws.shift()!);
          const set = eps.flatMap((e, i) => (panic || e.available ? [i] : []));
          const chosen = b.pick(undefined, panic);
          if (set.length < 2) {
            expect(chosen).toBe(set.length === 0 ? -1 : set[0]);
            return;
          }
          const first = set[Math.floor(r1! * set.length)]!;
          const others = set.filter((i) => i !== first);
          const second = others[Math.floor(r2! * others.length)]!;
          expect(first).not.toBe(second);
          expect([first, second]).toContain(chosen);
          const other = chosen === first ? second : first;
          expect(load(eps[chosen]!)).toBeLessThanOrEqual(load(eps[other]!));
        },
      ),
    );
  });

  it("with two available endpoints always sends to the less loaded one (the samples are different)", () => {
    const eps = endpoints([
      { weight: 1, inFlight: 1, available: true },
      { weight: 1, inFlight: 3, available: true },
      { weight: 1, inFlight: 0, available: false },
    ]);
    const b = createBalancer("least_request", eps);
    for (let k = 0; k < 1000; k++) expect(b.pick(undefined, false)).toBe(0);
  });

  it("prefers the idle endpoint in proportion to how often it is sampled (2 of 3 pairs hold it)", () => {
    const eps = endpoints([
      { weight: 1, inFlight: 0, available: true },
      { weight: 1, inFlight: 10, available: true },
      { weight: 1, inFlight: 10, available: true },
    ]);
    const b = createBalancer("least_request", eps);
    const counts = [0, 0, 0];
    const picks = 30_000;
    for (let k = 0; k < picks; k++) counts[b.pick(undefined, false)]!++;
    // Binomial(30000, 2/3): sd ~ 82, so +-600 is over 7 sd.
    expect(Math.abs(counts[0]! - (2 / 3) * picks)).toBeLessThan(600);
    expect(Math.abs(counts[1]! - counts[2]!)).toBeLessThan(600);
  });

  it("spreads evenly over equally loaded endpoints with its own random source", () => {
    const eps = endpoints([1, 2, 3, 4].map(() => ({ weight: 1, inFlight: 0, available: true })));
    const b = createBalancer("least_request", eps);
    const counts = [0, 0, 0, 0];
    for (let k = 0; k < 40_000; k++) counts[b.pick(undefined, false)]!++;
    // A tie keeps the first sample, which is uniform: 10000 each, sd ~ 87.
    for (const c of counts) expect(Math.abs(c - 10_000)).toBeLessThan(700);
  });

  it("answers -1 with nothing available, and picks among all endpoints under panic", () => {
    const eps = endpoints([
      { weight: 1, inFlight: 5, available: false },
      { weight: 1, inFlight: 1, available: false },
    ]);
    const b = createBalancer("least_request", eps);
    expect(b.pick(undefined, false)).toBe(-1);
    for (let k = 0; k < 100; k++) expect(b.pick(undefined, true)).toBe(1);
  });
});

describe("least_request with unequal weights (Envoy's weighted least request)", () => {
  it("spreads an idle pool exactly in the weights' ratio, interleaved", () => {
    const eps = endpoints([
      { weight: 1, inFlight: 0, available: true },
      { weight: 3, inFlight: 0, available: true },
      { weight: 2, inFlight: 0, available: true },
    ]);
    const b = createBalancer("least_request", eps);
    for (let cycle = 0; cycle < 100; cycle++) {
      const counts = [0, 0, 0];
      for (let k = 0; k < 6; k++) counts[b.pick(undefined, false)]!++;
      expect(counts).toEqual([1, 3, 2]);
    }
  });

  it("follows weight / (in flight + 1): a busy heavy endpoint gets fewer picks than its weight says", () => {
    const eps = endpoints([
      { weight: 1, inFlight: 0, available: true },
      { weight: 4, inFlight: 7, available: true }, // effective 4 / 8 = 0.5
    ]);
    const b = createBalancer("least_request", eps);
    const counts = [0, 0];
    for (let k = 0; k < 3000; k++) counts[b.pick(undefined, false)]!++;
    // Effective weights 1 and 0.5: two picks in three to the idle light endpoint.
    expect(counts[0]).toBe(2000);
    expect(counts[1]).toBe(1000);
  });

  it("skips unavailable endpoints, a returning one rejoins at the schedule's time, -1 with none, all under panic", () => {
    const eps = endpoints([
      { weight: 1, inFlight: 0, available: true },
      { weight: 2, inFlight: 0, available: false },
    ]);
    const b = createBalancer("least_request", eps);
    for (let k = 0; k < 100; k++) expect(b.pick(undefined, false)).toBe(0);
    eps[1]!.available = true;
    // Back: its share from now on, not a burst making up for its absence.
    const counts = [0, 0];
    for (let k = 0; k < 6; k++) counts[b.pick(undefined, false)]!++;
    expect(counts).toEqual([2, 4]);
    eps[0]!.available = false;
    eps[1]!.available = false;
    expect(b.pick(undefined, false)).toBe(-1);
    const panicked = new Set<number>();
    for (let k = 0; k < 6; k++) panicked.add(b.pick(undefined, true));
    expect([...panicked].sort()).toEqual([0, 1]);
  });
});
