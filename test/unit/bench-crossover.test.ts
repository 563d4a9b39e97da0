import { describe, expect, it } from "vitest";
import { crossoverEffects, type CrossoverRun } from "../bench/crossover.js";

/** A run whose rounds read `ratio` d*\/d (requests per second) and its inverse (CPU per request). */
const run = (alt: "A" | "B", ratios: number[]): CrossoverRun => ({
  alt,
  rpsRatios: ratios,
  cpuRatios: ratios.map((r) => 1 / r),
});

describe("crossover A/B (test/bench/crossover.ts)", () => {
  it("separates a build effect from a place effect the swap cancels", () => {
    // B is 1.05x as fast as A; whichever build is d* runs 1.10x ahead of d.
    const place = 1.1;
    const build = 1.05;
    const e = crossoverEffects([
      run("B", [place * build, place * build * 1.2, (place * build) / 1.2]),
      run("A", [place / build]),
      run("B", [place * build]),
      run("A", [place / build, place / build]),
    ]);
    expect(e.rpsBOverA).toBeCloseTo(build, 6);
    expect(e.cpuBOverA).toBeCloseTo(1 / build, 6);
    expect(e.rpsPlace).toBeCloseTo(place, 6);
    expect(e.perRun.map((p) => p.rps)).toEqual([
      expect.closeTo(place * build, 6),
      expect.closeTo(build / place, 6),
      expect.closeTo(place * build, 6),
      expect.closeTo(build / place, 6),
    ]);
    // No spread within either placement: the band is the estimate itself.
    expect(e.rpsBand[0]).toBeCloseTo(build, 6);
    expect(e.rpsBand[1]).toBeCloseTo(build, 6);
  });

  it("widens the band with the runs' spread and keeps the estimate inside it", () => {
    const e = crossoverEffects([run("B", [1.2]), run("A", [1.0]), run("B", [1.0]), run("A", [0.9])]);
    expect(e.rpsBand[0]).toBeLessThan(e.rpsBOverA);
    expect(e.rpsBand[1]).toBeGreaterThan(e.rpsBOverA);
  });
});
