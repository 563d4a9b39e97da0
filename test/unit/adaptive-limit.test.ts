/**
 * SPEC §18's adaptive limit (gateway/proxy/adaptive-limit.ts, after Netflix's `Gradient2Limit`) on
 * synthetic latency series, with an injected clock: it starts at 20 clamped, rises on flat latency,
 * falls when latency grows, recovers when it returns, settles near a simulated upstream's
 * capacity, and re-measures the no-load latency within a minute.
 */
import { describe, expect, it } from "vitest";
import { AdaptiveLimit, WINDOW_MS, WINDOW_SAMPLES } from "../../gateway/proxy/adaptive-limit.js";

/** A limit on a clock the test moves. */
function limitOf(minLimit = 1, maxLimit = 1000): { limit: AdaptiveLimit; clock: { ms: number } } {
  const clock = { ms: 0 };
  return { limit: new AdaptiveLimit({ minLimit, maxLimit, nowMs: () => clock.ms }), clock };
}

/**
 * Feeds `windows` sample windows of one second, each of {@link WINDOW_SAMPLES} calls with the
 * latency `latencyMs(limit)`, the upstream kept full (calls in flight = the limit).
 */
function run(
  { limit, clock }: ReturnType<typeof limitOf>,
  windows: number,
  latencyMs: (limit: number) => number,
): number[] {
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
  it("starts at 20 clamped to [min_limit, max_limit]", () => {
    expect(limitOf().limit.limit).toBe(20);
    expect(limitOf(30, 100).limit.limit).toBe(30);
    expect(limitOf(1, 8).limit.limit).toBe(8);
  });

  it("rises on flat latency, up to max_limit", () => {
    const l = limitOf(1, 40);
    const seen = run(l, 10, () => 50);
    expect(seen[9]).toBeGreaterThan(20);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    run(l, 100, () => 50);
    expect(l.limit.limit).toBe(40);
  });

  it("does not rise while the callers keep the upstream half empty", () => {
    const { limit, clock } = limitOf();
    for (let i = 0; i < 200; i++) {
      clock.ms += 100;
      limit.sample(50, 3);
    }
    expect(limit.limit).toBe(20);
  });

  it("falls when latency grows, not below min_limit, and recovers when it returns", () => {
    const l = limitOf(4, 1000);
    run(l, 5, () => 50);
    const before = l.limit.limit;
    const falling = run(l, 20, () => 200);
    expect(falling[0]).toBeLessThan(before);
    // The gradient's floor: QUEUE_SIZE / (1 - 0.5) = 8 calls.
    expect(falling[19]).toBeLessThanOrEqual(9);
    const recovering = run(l, 20, () => 50);
    expect(recovering[19]).toBeGreaterThan(10);
  });

  it("tolerates latency up to 1.5× the no-load latency", () => {
    const l = limitOf();
    run(l, 2, () => 50);
    const seen = run(l, 10, () => 70);
    expect(seen[9]).toBeGreaterThan(seen[0]!);
  });

  it("settles near the capacity of an upstream that serves 10 at once and queues the rest", () => {
    const l = limitOf(1, 1000);
    // Service 50 ms; a call beyond the 10th waits for a slot: latency grows with the queue.
    const upstream = (inFlight: number): number => 50 * Math.max(1, inFlight / 10);
    // Saturated from the first call, it first takes the queued latency for the no-load one; the
    // probe after a minute finds the real one.
    const seen = run(l, 120, upstream);
    const settled = seen.slice(90);
    expect(Math.min(...settled)).toBeGreaterThanOrEqual(8);
    expect(Math.max(...settled)).toBeLessThanOrEqual(20);
    // The latency of the admitted calls within 3× the no-load latency (SPEC §18).
    expect(upstream(Math.max(...settled))).toBeLessThanOrEqual(150);
  });

  it("re-measures the no-load latency within a minute: an upstream that got slower for good", () => {
    const l = limitOf(1, 1000);
    run(l, 3, () => 20);
    expect(l.limit.noLoadMs).toBe(20);
    run(l, 56, () => 100);
    const before = l.limit.limit;
    expect(before).toBeGreaterThan(1);
    expect(l.limit.noLoadMs).toBe(20);
    // A minute on: the probe holds the limit at min_limit until 10 calls made at that concurrency
    // have answered; a call made with more in flight does not count.
    l.clock.ms = 60_000;
    l.limit.sample(100, 1);
    expect(l.limit.limit).toBe(1);
    l.limit.sample(100, 5);
    for (let i = 0; i < 8; i++) l.limit.sample(100, 1);
    expect(l.limit.limit).toBe(1);
    l.limit.sample(100, 1);
    expect(l.limit.noLoadMs).toBe(100);
    expect(l.limit.limit).toBe(before);
    const low = l.limit.limit;
    run(l, 10, () => 100);
    expect(l.limit.limit).toBeGreaterThan(low);
  });
});
