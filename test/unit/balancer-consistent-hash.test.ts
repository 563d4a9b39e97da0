/**
 * SPEC §16 `consistent_hash`: weighted rendezvous hashing on MurmurHash3. The same key goes to the
 * same endpoint while the available set is unchanged; an endpoint that leaves or returns moves only
 * its own keys; keys spread in proportion to weight; calls without a key go round robin.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createBalancer, type BalancedEndpoint } from "../../gateway/proxy/balancing/balancer.js";

function endpoints(weights: readonly number[], names?: readonly string[]): BalancedEndpoint[] {
  return weights.map((weight, i) => ({
    name: names?.[i] ?? `10.0.0.${i + 1}:3000`,
    weight,
    available: true,
    inFlight: 0,
  }));
}

const KEYS = Array.from({ length: 20_000 }, (_, i) => `consumer-${i}`);

/** Distinct `host:port` names with weights 1..5. */
const pool = fc
  .uniqueArray(fc.tuple(fc.ipV4(), fc.integer({ min: 1, max: 65535 })), {
    minLength: 2,
    maxLength: 8,
    selector: ([h, p]) => `${h}:${p}`,
  })
  .chain((addrs) =>
    fc.tuple(
      fc.constant(addrs.map(([h, p]) => `${h}:${p}`)),
      fc.array(fc.integer({ min: 1, max: 5 }), { minLength: addrs.length, maxLength: addrs.length }),
    ),
  );
const keys = fc.uniqueArray(fc.string({ minLength: 0, maxLength: 40 }), { minLength: 1, maxLength: 150 });

describe("consistent_hash (weighted rendezvous)", () => {
  it("sends a key to the same endpoint every time, and so does a balancer built again", () => {
    fc.assert(
      fc.property(pool, keys, ([names, weights], ks) => {
        const a = createBalancer("consistent_hash", endpoints(weights, names));
        const b = createBalancer("consistent_hash", endpoints(weights, names));
        for (const k of ks) {
          const i = a.pick(k, false);
          expect(i).toBeGreaterThanOrEqual(0);
          expect(a.pick(k, false)).toBe(i);
          expect(b.pick(k, false)).toBe(i);
        }
      }),
    );
  });

  it("moves only the keys of an endpoint that leaves, and moves them back when it returns", () => {
    fc.assert(
      fc.property(pool, keys, fc.nat(), ([names, weights], ks, which) => {
        const eps = endpoints(weights, names);
        const b = createBalancer("consistent_hash", eps);
        const gone = which % eps.length;
        const before = ks.map((k) => b.pick(k, false));
        eps[gone]!.available = false;
        const during = ks.map((k) => b.pick(k, false));
        ks.forEach((_, j) => {
          if (before[j] === gone) expect(during[j]).not.toBe(gone);
          else expect(during[j]).toBe(before[j]);
        });
        eps[gone]!.available = true;
        expect(ks.map((k) => b.pick(k, false))).toEqual(before);
      }),
    );
  });

  it("gives a newly added endpoint only keys that move to it (a balancer built on the larger set)", () => {
    fc.assert(
      fc.property(pool, keys, ([names, weights], ks) => {
        const small = createBalancer("consistent_hash", endpoints(weights.slice(1), names.slice(1)));
        const large = createBalancer("consistent_hash", endpoints(weights, names));
        for (const k of ks) {
          const after = large.pick(k, false);
          if (after !== 0) expect(after).toBe(small.pick(k, false) + 1);
        }
      }),
    );
  });

  it("spreads keys in proportion to weight", () => {
    fc.assert(
      fc.property(pool, ([names, weights]) => {
        const b = createBalancer("consistent_hash", endpoints(weights, names));
        const counts = weights.map(() => 0);
        for (const k of KEYS) counts[b.pick(k, false)]!++;
        const total = weights.reduce((s, w) => s + w, 0);
        // Binomial sd of a share over 20000 keys is at most 0.0036; 0.03 is over 8 sd.
        counts.forEach((c, i) => expect(Math.abs(c / KEYS.length - weights[i]! / total)).toBeLessThan(0.03));
      }),
      { numRuns: 25 },
    );
  });

  it("spreads keys evenly over equal weights (chi-square, 3 endpoints)", () => {
    const b = createBalancer("consistent_hash", endpoints([1, 1, 1]));
    const counts = [0, 0, 0];
    for (const k of KEYS) counts[b.pick(k, false)]!++;
    const expected = KEYS.length / 3;
    const chi2 = counts.reduce((s, c) => s + (c - expected) ** 2 / expected, 0);
    expect(chi2).toBeLessThan(13.8); // 2 degrees of freedom, p = 0.001
  });

  it("spreads the keys of an endpoint that leaves evenly over the others", () => {
    const eps = endpoints([1, 1, 1, 1]);
    const b = createBalancer("consistent_hash", eps);
    const theirs = KEYS.filter((k) => b.pick(k, false) === 0);
    eps[0]!.available = false;
    const counts = [0, 0, 0, 0];
    for (const k of theirs) counts[b.pick(k, false)]!++;
    expect(counts[0]).toBe(0);
    // About 5000 keys over 3 endpoints: sd of a count ~ 33; a lane correlation would skew it.
    for (const c of counts.slice(1)) expect(Math.abs(c - theirs.length / 3)).toBeLessThan(250);
  });

  it("spreads calls without a key by smooth weighted round robin over the available endpoints", () => {
    const eps = endpoints([2, 1, 1]);
    eps[2]!.available = false;
    const b = createBalancer("consistent_hash", eps);
    expect(Array.from({ length: 6 }, () => b.pick(undefined, false))).toEqual([0, 1, 0, 0, 1, 0]);
  });

  it("answers -1 with nothing available, and under panic maps keys as if every endpoint were available", () => {
    const eps = endpoints([1, 2, 3]);
    const b = createBalancer("consistent_hash", eps);
    const healthy = KEYS.slice(0, 500).map((k) => b.pick(k, false));
    for (const e of eps) e.available = false;
    expect(b.pick("consumer-1", false)).toBe(-1);
    expect(b.pick(undefined, false)).toBe(-1);
    expect(KEYS.slice(0, 500).map((k) => b.pick(k, true))).toEqual(healthy);
  });
});
