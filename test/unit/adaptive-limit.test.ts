/**
 * SPEC §18's adaptive limit (gateway/proxy/adaptive-limit.ts: a BBR-style startup, then Netflix's
 * `Gradient2Limit`) on synthetic latency series, with an injected clock: it starts at `max_limit`
 * and leaves it only once every call of a window waited, for the upstream's bandwidth-delay
 * product; it then rises on flat latency, falls when latency grows, settles near a simulated
 * upstream's capacity, re-measures the no-load latency every minute without holding calls back and
 * within 2 s whatever is in flight, and does not take the gateway's own stall for the upstream's.
 */
import { describe, expect, it } from "vitest";
import { Counter, Registry } from "prom-client";
import {
  AdaptiveLimit,
  MEASURE_MS,
  PROBE_INTERVAL_MS,
  WINDOW_MS,
  WINDOW_SAMPLES,
} from "../../gateway/proxy/adaptive-limit.js";
import { Admission } from "../../gateway/proxy/admission.js";
import { InFlightLedger } from "../../gateway/proxy/in-flight-ledger.js";

type Limit = { limit: AdaptiveLimit; clock: { ms: number } };

/** A limit on a clock the test moves. */
function limitOf(minLimit = 1, maxLimit = 1000): Limit {
  const clock = { ms: 0 };
  // No jitter: the mark is exactly PROBE_INTERVAL_MS after the start.
  const limit = new AdaptiveLimit({
    minLimit,
    maxLimit,
    clock: { monotonicMs: () => clock.ms, random: () => 0 },
  });
  return { limit, clock };
}

/** Feeds `n` samples of `latencyMs`, `everyMs` apart, with `inFlight` calls in flight. */
function feed({ limit, clock }: Limit, n: number, latencyMs: number, everyMs: number, inFlight = 1): void {
  for (let i = 0; i < n; i++) {
    clock.ms += everyMs;
    limit.sample(latencyMs, inFlight);
  }
}

/**
 * Brings a fresh limit out of startup at `target` calls: a no-load latency of 50 ms, then a
 * saturated window (every call at 200 ms) answered at `target / 100` calls per ms.
 */
function steadyAt(l: Limit, target: number): void {
  feed(l, WINDOW_SAMPLES, 50, 5);
  for (let i = 0; i < 1000 && l.limit.starting; i++) feed(l, 1, 200, 100 / target, target);
  expect(l.limit.starting).toBe(false);
  expect(l.limit.limit).toBe(target);
}

/**
 * Feeds `windows` steady windows of one second, each of {@link WINDOW_SAMPLES} calls with the
 * latency `latencyMs(limit)`, the upstream kept full (calls in flight = the limit).
 */
function run({ limit, clock }: Limit, windows: number, latencyMs: (limit: number) => number): number[] {
  const seen: number[] = [];
  for (let w = 0; w < windows; w++) {
    for (let s = 0; s < WINDOW_SAMPLES; s++) {
      clock.ms += WINDOW_MS / WINDOW_SAMPLES;
      limit.sample(latencyMs(limit.limit), limit.limit);
    }
    seen.push(limit.limit);
  }
  return seen;
}

describe("the adaptive concurrency limit", () => {
  it("starts at max_limit and stays there while latency stays at its no-load value", () => {
    const l = limitOf(5, 1000);
    expect(l.limit.limit).toBe(1000);
    // 200 calls at once, all answered in 100 ms, again and again: no evidence of queueing.
    for (let burst = 0; burst < 20; burst++) feed(l, 200, 100, 0.5, 200);
    expect(l.limit.starting).toBe(true);
    expect(l.limit.limit).toBe(1000);
  });

  it("does not feed the steady windows with calls sent before startup ended (BBR's drain)", () => {
    const l = limitOf(5, 1000);
    steadyAt(l, 30);
    // Two seconds of answers to calls queued behind startup's flood (sent before it ended).
    for (let i = 0; i < 40; i++) {
      l.clock.ms += 50;
      l.limit.sample(l.clock.ms + 10_000, 30);
    }
    expect(l.limit.limit).toBe(30);
  });

  it("leaves startup only on a window where nine calls in ten waited, for the bandwidth-delay product", () => {
    const l = limitOf(5, 1000);
    feed(l, WINDOW_SAMPLES, 50, 5);
    expect(l.limit.noLoadMs).toBe(50);
    // Slow on average, but a quarter of each window went straight through: no evidence.
    for (let w = 0; w < 20; w++) {
      feed(l, 15, 400, 5, 300);
      feed(l, 5, 50, 5, 300);
    }
    expect(l.limit.limit).toBe(1000);
    // Every call waits; 0.2 answers per ms at 50 ms no-load: 10 served at once, × 2.
    feed(l, 40, 300, 5, 300);
    expect(l.limit.starting).toBe(false);
    expect(l.limit.limit).toBe(20);
  });

  it("rises on flat latency, up to max_limit", () => {
    const l = limitOf(1, 40);
    steadyAt(l, 20);
    const seen = run(l, 10, () => 50);
    expect(seen[9]).toBeGreaterThan(20);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    run(l, 100, () => 50);
    expect(l.limit.limit).toBe(40);
  });

  it("does not move while the callers keep the upstream half empty", () => {
    const l = limitOf();
    steadyAt(l, 20);
    feed(l, 200, 50, 100, 3);
    feed(l, 200, 500, 100, 3);
    expect(l.limit.limit).toBe(20);
  });

  it("falls when latency grows, not below min_limit, and recovers when it returns", () => {
    const l = limitOf(4, 1000);
    steadyAt(l, 30);
    const falling = run(l, 30, () => 200);
    // The first window is short of the calls sent before startup ended (its drain): then it falls.
    expect(falling[1]).toBeLessThan(30);
    // The gradient's floor: QUEUE_SIZE / (1 - 0.5) = 8 calls.
    expect(falling[29]).toBeLessThanOrEqual(9);
    const recovering = run(l, 20, () => 50);
    expect(recovering[19]).toBeGreaterThan(10);
  });

  it("tolerates latency up to 1.5× the no-load latency", () => {
    const l = limitOf();
    steadyAt(l, 20);
    const seen = run(l, 10, () => 70);
    expect(seen[9]).toBeGreaterThan(seen[0]!);
  });

  it("settles near the capacity of an upstream that serves 10 at once and queues the rest", () => {
    const { limit, clock } = limitOf(1, 1000);
    // Service 50 ms; a call beyond the 10th waits for a slot. The callers' demand grows by one
    // call in flight every 10 ms; answers come at the rate Little's law gives.
    const latencyOf = (inFlight: number): number => 50 * Math.max(1, inFlight / 10);
    const seen: number[] = [];
    let nextS = 1000;
    while (clock.ms < PROBE_INTERVAL_MS - 1000) {
      const inFlight = Math.min(limit.limit, 2 + Math.floor(clock.ms / 10));
      const latency = latencyOf(inFlight);
      clock.ms += latency / inFlight;
      limit.sample(latency, inFlight);
      if (clock.ms >= nextS) {
        seen.push(limit.limit);
        nextS += 1000;
      }
    }
    // Out of startup within the first second, at twice the 10 calls it serves at once.
    expect(seen[0]).toBe(20);
    const settled = seen.slice(10);
    expect(Math.min(...settled)).toBeGreaterThanOrEqual(8);
    expect(Math.max(...settled)).toBeLessThanOrEqual(20);
    // The latency of the admitted calls within 3× the no-load latency (SPEC §18).
    expect(latencyOf(Math.max(...settled))).toBeLessThanOrEqual(150);
  });

  it("re-measures every minute from max_limit, within 2 s, whatever is in flight", () => {
    const l = limitOf(5, 1000);
    steadyAt(l, 20);
    l.clock.ms = PROBE_INTERVAL_MS;
    // The mark: nothing held back, and no answer needed to get there (long calls in flight).
    expect(l.limit.limit).toBe(1000);
    expect(l.limit.measuring).toBe(true);
    l.clock.ms += MEASURE_MS;
    expect(l.limit.measuring).toBe(false);
    // No clean answer came: the no-load latency measured before stays.
    expect(l.limit.noLoadMs).toBe(50);
  });

  it("re-measures the no-load latency: an upstream that got slower for good", () => {
    const l = limitOf(1, 1000);
    steadyAt(l, 20);
    run(l, 50, () => 100);
    expect(l.limit.noLoadMs).toBe(50);
    l.clock.ms = 2 * PROBE_INTERVAL_MS;
    // Ten answers to calls sent after the mark end it early, at any concurrency; the first ten
    // answers here (100 ms, 10 ms apart) are to calls sent before it, which do not count.
    feed(l, WINDOW_SAMPLES, 100, 10, 500);
    expect(l.limit.measuring).toBe(true);
    feed(l, WINDOW_SAMPLES, 100, 10, 500);
    expect(l.limit.measuring).toBe(false);
    expect(l.limit.noLoadMs).toBe(100);
    feed(l, 500, 120, 2, 50);
    expect(l.limit.limit).toBe(1000);
  });

  it("does not take the gateway's stalled event loop for the upstream's latency", () => {
    const l = limitOf(5, 1000);
    // A 5 ms upstream; the gateway's loop stalls ~45 ms over most calls.
    for (let i = 0; i < 2000; i++) {
      l.clock.ms += 1;
      const stallMs = i % 10 === 0 ? 0 : 45;
      l.limit.sample(5 + stallMs, 50, stallMs);
    }
    expect(l.limit.noLoadMs).toBe(5);
    expect(l.limit.starting).toBe(true);
    expect(l.limit.limit).toBe(1000);
    // The no-load latency is a whole latency (an upper bound), never one less its stall.
    const m = limitOf(5, 1000);
    m.clock.ms = 60;
    m.limit.sample(50, 1, 48);
    expect(m.limit.noLoadMs).toBe(50);
  });
});

it("shortens the interval by up to 15 % (Envoy's jitter), never lengthens it", () => {
  for (const draw of [0, 0.5, 0.999]) {
    const clock = { ms: 0 };
    const limit = new AdaptiveLimit({
      minLimit: 1,
      maxLimit: 100,
      clock: { monotonicMs: () => clock.ms, random: () => draw },
    });
    clock.ms = MEASURE_MS;
    expect(limit.measuring).toBe(false);
    clock.ms = PROBE_INTERVAL_MS * (1 - 0.15 * draw) - 1;
    expect(limit.measuring).toBe(false);
    clock.ms += 1;
    expect(limit.measuring).toBe(true);
  }
});

it("a steady window mostly made of the gateway's stall moves the limit neither way", () => {
  const l = limitOf(1, 1000);
  steadyAt(l, 20);
  // 300 ms whole (queueing, were it the upstream's), 20 ms less the stall (room to grow).
  for (let i = 0; i < 100; i++) {
    l.clock.ms += 100;
    l.limit.sample(300, 20, 280);
  }
  expect(l.limit.limit).toBe(20);
  // Little stall: the windows count again.
  for (let i = 0; i < 100; i++) {
    l.clock.ms += 100;
    l.limit.sample(300, 20, 10);
  }
  expect(l.limit.limit).toBeLessThan(20);
});

describe("admission across the re-measurement", () => {
  it("admits every call while long ones stay in flight over the mark, and flags none in shadow mode", () => {
    for (const mode of ["enforce", "shadow"] as const) {
      const clock = { ms: 0 };
      const overloaded = new Counter({
        name: "t_overloaded_total",
        help: "t",
        labelNames: ["upstream", "priority"],
        registers: [new Registry()],
      });
      const ledger = new InFlightLedger();
      const a = new Admission(
        "docs",
        ledger,
        0,
        { min_limit: 5, max_limit: 1000, mode },
        { nowMs: () => 0, monotonicMs: () => clock.ms, random: Math.random },
        overloaded,
      );
      const admit = (): string => {
        const admitted = a.admit("default", 1);
        if (admitted !== "shed") ledger.callAdmitted();
        return admitted;
      };
      const limit = a.adaptive!;
      // Steady at 20: 30 long streams opened before the mark stay in flight across it.
      feed({ limit, clock }, WINDOW_SAMPLES, 50, 5);
      feed({ limit, clock }, 100, 200, 100 / 20, 20);
      expect(a.limit).toBe(20);
      for (let i = 0; i < 20; i++) expect(admit()).toBe("admitted");
      clock.ms += PROBE_INTERVAL_MS;
      for (let i = 0; i < 200; i++) expect(admit()).toBe("admitted");
      clock.ms += MEASURE_MS;
      expect(limit.measuring).toBe(false);
      for (let i = 0; i < 200; i++) expect(admit()).toBe("admitted");
    }
  });
});
