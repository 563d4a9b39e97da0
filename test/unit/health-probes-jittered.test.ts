/**
 * SPEC §16's probes after the first round (gateway/proxy/health-checker.ts `nextProbeDelayMs`):
 * each interval is shortened by a random part of up to a tenth of `interval_ms` (Envoy's
 * `interval_jitter_percent`), counted from the previous probe's start, never lengthened, so a
 * restarted instance is still seen within `interval_ms` × `healthy_threshold`; the first wait
 * after start adds the endpoint's place in the round.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nextProbeDelayMs, PROBE_JITTER } from "../../gateway/proxy/health-checker.js";

describe("health probes after the first round", () => {
  it("wait between 90 % and 100 % of the interval from the previous probe's start", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 600_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.nat({ max: 1000 }),
        (interval, draw, elapsed) => {
          const delay = nextProbeDelayMs(interval, elapsed, 0, draw);
          expect(delay).toBeGreaterThanOrEqual(0);
          expect(delay + elapsed).toBeLessThanOrEqual(Math.max(interval, elapsed));
          expect(delay + elapsed).toBeGreaterThanOrEqual(
            Math.min(elapsed, Math.ceil((1 - PROBE_JITTER) * interval)),
          );
        },
      ),
    );
  });

  it("spread: draws across [0, 1) give waits across the jitter range, not one value", () => {
    const waits = new Set([0, 0.25, 0.5, 0.75, 0.99].map((d) => nextProbeDelayMs(2000, 0, 0, d)));
    expect([...waits].sort((a, b) => a - b)).toEqual([1802, 1850, 1900, 1950, 2000]);
  });

  it("adds the endpoint's place in the first round once", () => {
    expect(nextProbeDelayMs(1000, 10, 500, 0)).toBe(1490);
    expect(nextProbeDelayMs(1000, 5000, 500, 0)).toBe(0);
  });
});
