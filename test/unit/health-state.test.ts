/**
 * SPEC §16 active health state of one endpoint: starts healthy; unhealthy after
 * `unhealthy_threshold` consecutive failing probes; healthy again after `healthy_threshold`
 * consecutive passing ones; each call says whether the state changed.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HealthState } from "../../gateway/proxy/balancing/health-state.js";

describe("HealthState", () => {
  it("starts healthy, leaves after 3 failures in a row and returns after 2 passes in a row", () => {
    const h = new HealthState({ healthyThreshold: 2, unhealthyThreshold: 3 });
    expect(h.healthy).toBe(true);
    expect([h.fail(), h.fail(), h.pass(), h.fail(), h.fail()]).toEqual([false, false, false, false, false]);
    expect(h.healthy).toBe(true); // the pass broke the first streak
    expect(h.fail()).toBe(true);
    expect(h.healthy).toBe(false);
    expect([h.fail(), h.pass(), h.fail(), h.pass()]).toEqual([false, false, false, false]);
    expect(h.healthy).toBe(false); // the failure broke the streak of passes
    expect(h.pass()).toBe(true);
    expect(h.healthy).toBe(true);
    expect(h.pass()).toBe(false);
  });

  it("changes state exactly when the last `threshold` results agree against it (any sequence)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.boolean(), { maxLength: 200 }),
        (healthyThreshold, unhealthyThreshold, probes) => {
          const h = new HealthState({ healthyThreshold, unhealthyThreshold });
          // Model: the run of identical results since the last change.
          let healthy = true;
          let run = 0;
          for (const passed of probes) {
            run = passed !== healthy ? run + 1 : 0;
            const flips = run === (healthy ? unhealthyThreshold : healthyThreshold);
            if (flips) {
              healthy = !healthy;
              run = 0;
            }
            expect(passed ? h.pass() : h.fail()).toBe(flips);
            expect(h.healthy).toBe(healthy);
          }
        },
      ),
    );
  });

  it("with thresholds of 1 follows every probe", () => {
    const h = new HealthState({ healthyThreshold: 1, unhealthyThreshold: 1 });
    expect([h.fail(), h.fail(), h.pass(), h.pass(), h.fail()]).toEqual([true, false, true, false, true]);
  });
});
