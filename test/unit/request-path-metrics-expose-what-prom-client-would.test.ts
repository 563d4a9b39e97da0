/**
 * The request path's counter and histogram families (`gateway/observability/hot-families.ts`)
 * expose exactly what prom-client's own `Counter` and `Histogram` expose for the same updates
 * (a child looked up but never updated included: no series):
 * the same samples in `/metrics` text, and the same sums when a cluster primary aggregates
 * workers' JSON with `AggregatorRegistry`.
 */
import fc from "fast-check";
import { AggregatorRegistry, Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { HotCounter, HotHistogram } from "../../gateway/observability/hot-families.js";
import { parsePrometheusText, type Sample } from "../helpers/prom.js";

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const ROUTES = ["/v1", "/v2/docs", 'a "quoted" \\ route'];
const CLASSES = ["read", "write"];

/** One update: which series, and the value observed (a counter adds 1). */
const update = fc.record({
  route: fc.constantFrom(...ROUTES),
  cls: fc.constantFrom(...CLASSES),
  code: fc.constantFrom(200, 429, 502),
  // Bucket bounds themselves (le is inclusive), values between them, zero and beyond the last.
  seconds: fc.oneof(fc.constantFrom(0, ...BUCKETS, 31), fc.double({ min: 0, max: 40, noNaN: true })),
  // A child looked up and never updated: no series, as with prom-client's `labels()`.
  touchOnly: fc.boolean(),
});

type Update = { route: string; cls: string; code: number; seconds: number; touchOnly?: boolean };

/** Both implementations of one counter and one histogram family, on their own registries. */
function families() {
  const lib = new Registry();
  const hot = new Registry();
  const counter = {
    name: "t_requests_total",
    help: "Requests.",
    labelNames: ["route", "class", "code"] as const,
  };
  const histogram = {
    name: "t_duration_seconds",
    help: "Durations.",
    labelNames: ["route", "class"] as const,
  };
  return {
    lib,
    hot,
    libCounter: new Counter({ ...counter, registers: [lib] }),
    libHistogram: new Histogram({ ...histogram, buckets: BUCKETS, registers: [lib] }),
    hotCounter: new HotCounter({ ...counter, registers: [hot] }),
    hotHistogram: new HotHistogram({ ...histogram, buckets: BUCKETS, registers: [hot] }),
  };
}

/** Applies `updates` to both; the hot family through children held across updates, as the request path does. */
function apply(f: ReturnType<typeof families>, updates: readonly Update[]): void {
  for (const u of updates) {
    if (u.touchOnly === true) {
      f.hotCounter.labels({ route: u.route, class: u.cls, code: u.code });
      f.hotHistogram.labels({ route: u.route, class: u.cls });
      continue;
    }
    f.libCounter.inc({ route: u.route, class: u.cls, code: u.code });
    f.libHistogram.observe({ route: u.route, class: u.cls }, u.seconds);
    f.hotCounter.labels({ route: u.route, class: u.cls, code: u.code }).inc();
    f.hotHistogram.labels({ route: u.route, class: u.cls }).observe(u.seconds);
  }
}

/** Samples in a canonical order, label order aside (the text format leaves both open). */
function canonical(samples: readonly Sample[]): string[] {
  return samples.map((s) => `${s.name}${JSON.stringify(Object.entries(s.labels).sort())} ${s.value}`).sort();
}

describe("hot counter and histogram families", () => {
  it("write the samples prom-client's Counter and Histogram write, for any updates", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(update, { maxLength: 60 }), async (updates) => {
        const f = families();
        apply(f, updates);
        const lib = parsePrometheusText(await f.lib.metrics());
        const hot = parsePrometheusText(await f.hot.metrics());
        expect(canonical(hot.samples)).toEqual(canonical(lib.samples));
        expect([...hot.types]).toEqual([...lib.types]);
      }),
      { numRuns: 200 },
    );
  });

  it("sum across workers as prom-client's families do (AggregatorRegistry)", async () => {
    const workers = [families(), families()];
    apply(workers[0]!, [{ route: "/v1", cls: "read", code: 200, seconds: 0.002 }]);
    apply(workers[1]!, [
      { route: "/v1", cls: "read", code: 200, seconds: 0.2 },
      { route: "/v1", cls: "write", code: 429, seconds: 0.0005 },
    ]);
    const combine = async (which: "lib" | "hot") =>
      parsePrometheusText(
        await AggregatorRegistry.aggregate(
          await Promise.all(workers.map((w) => w[which].getMetricsAsJSON())),
        ).metrics(),
      );
    const hot = await combine("hot");
    expect(canonical(hot.samples)).toEqual(canonical((await combine("lib")).samples));
    expect(hot.value("t_requests_total", { route: "/v1", class: "read", code: "200" })).toBe(2);
    expect(hot.value("t_duration_seconds_bucket", { route: "/v1", class: "read", le: "0.0025" })).toBe(1);
    expect(hot.value("t_duration_seconds_count", { route: "/v1", class: "read" })).toBe(2);
  });

  it("refuses a label set that is not the family's, naming both", () => {
    const f = families();
    expect(() => f.hotHistogram.labels({ route: "/v1" } as never)).toThrow(
      "t_duration_seconds: labels route are not route, class",
    );
  });

  it("starts over on reset, as prom-client's registry reset does, and children held across it count on", async () => {
    const f = families();
    const held = f.hotHistogram.labels({ route: "/v1", class: "read" });
    apply(f, [{ route: "/v1", cls: "read", code: 200, seconds: 1 }]);
    f.hot.resetMetrics();
    f.lib.resetMetrics();
    expect((await f.hot.getMetricsAsJSON()).flatMap((m) => m.values)).toEqual([]);
    held.observe(0.002);
    f.libHistogram.observe({ route: "/v1", class: "read" }, 0.002);
    const hot = parsePrometheusText(await f.hot.metrics());
    expect(canonical(hot.samples)).toEqual(canonical(parsePrometheusText(await f.lib.metrics()).samples));
    expect(hot.value("t_duration_seconds_count", { route: "/v1", class: "read" })).toBe(1);
  });

  it("refuses what prom-client refuses on its cold paths, and drops NaN on the hot one", async () => {
    const f = families();
    expect(() => f.hotCounter.inc({ route: "/v1", class: "read", code: 200 }, -1)).toThrow(TypeError);
    expect(() => f.hotHistogram.observe({ route: "/v1", class: "read" }, Number.NaN)).toThrow(TypeError);
    const child = f.hotHistogram.labels({ route: "/v1", class: "read" });
    child.observe(Number.NaN);
    child.observe(0.5);
    const hot = parsePrometheusText(await f.hot.metrics());
    expect(hot.value("t_duration_seconds_sum", { route: "/v1", class: "read" })).toBe(0.5);
    expect(hot.value("t_duration_seconds_count", { route: "/v1", class: "read" })).toBe(1);
  });
});
