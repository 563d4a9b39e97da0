/**
 * The adaptive concurrency limit of one upstream (SPEC §18): a gradient controller after Netflix's
 * concurrency-limits `Gradient2Limit` (concurrency-limits-core/src/main/java/com/netflix/
 * concurrency/limits/limit/Gradient2Limit.java, with the sample window of `WindowedLimit.java` in
 * the same folder). Per window of samples it compares the window's average latency with the
 * no-load latency and moves the limit:
 *
 *   gradient = clamp(RTT_TOLERANCE × noLoad / windowAverage, 0.5, 1)
 *   target   = limit × gradient + QUEUE_SIZE
 *   limit    = clamp(limit × (1 − SMOOTHING) + target × SMOOTHING, minLimit, maxLimit)
 *
 * Flat latency gives gradient 1: the limit grows by QUEUE_SIZE × SMOOTHING per window. Latency
 * above RTT_TOLERANCE × no-load shrinks it, at most halving the target per window.
 *
 * Sustained latency at 2× or more holds it near QUEUE_SIZE / (1 − 0.5) = 8 calls (the gradient's floor), min_limit permitting.
 *
 * One departure from `Gradient2Limit`: its baseline is an exponential average of every latency (a
 * window of 600 samples), which drifts up under a sustained overload (the upstream never shows its
 * unqueued latency again). SPEC §18 wants the lowest latency recently seen, re-measured at least
 * once a minute, so the no-load latency here is the smallest sample seen, and every
 * {@link PROBE_INTERVAL_MS} it is measured afresh the way Envoy's adaptive concurrency filter does
 * (source/extensions/filters/http/adaptive_concurrency/controller/gradient_controller.cc, "minRTT
 * calculation window"): the limit drops to `min_limit` until {@link WINDOW_SAMPLES} calls made
 * with at most `min_limit` in flight have answered; their smallest latency is the new no-load one.
 */
import type { Milliseconds } from "../base/clock.js";

/** `Gradient2Limit`'s `initialLimit` default; SPEC §18 starts here, clamped to the bounds. */
export const INITIAL_LIMIT = 20;
/**
 * `Gradient2Limit`'s `rttTolerance` default: latency up to 1.5× the no-load latency is not
 * queueing (keeps the limit from shrinking on jitter), which keeps the admitted calls' latency
 * near 2× no-load at equilibrium, inside SPEC §18's 3×.
 */
export const RTT_TOLERANCE = 1.5;
/** `Gradient2Limit`'s `smoothing` default: a new estimate counts for a fifth. */
export const SMOOTHING = 0.2;
/** `Gradient2Limit`'s fixed `queueSize` default: how far the target may exceed the current limit. */
export const QUEUE_SIZE = 4;
/** `WindowedLimit`'s min and max window time (1 s): one update per second at most. */
export const WINDOW_MS: Milliseconds = 1_000;
/** `WindowedLimit`'s `windowSize`: a window needs at least 10 samples to count. */
export const WINDOW_SAMPLES = 10;
/** SPEC §18's "at least once a minute" (Envoy's `min_rtt_calc_params.interval` default, 60 s). */
export const PROBE_INTERVAL_MS: Milliseconds = 60_000;

/** Bounds and clock of one limit. */
export interface AdaptiveLimitOptions {
  /** `adaptive_concurrency.min_limit` (calls). */
  minLimit: number;
  /** `adaptive_concurrency.max_limit` (calls). */
  maxLimit: number;
  /** Monotonic milliseconds. */
  nowMs: () => Milliseconds;
}

/** One upstream's adaptive limit: fed a latency per call, read as {@link limit}. */
export class AdaptiveLimit {
  /** The current limit (calls in flight), an integer within the bounds. */
  limit: number;
  private estimate: number;
  private readonly minLimit: number;
  private readonly maxLimit: number;
  private readonly nowMs: () => Milliseconds;
  private windowStartMs: Milliseconds;
  private windowSumMs = 0;
  private windowCount = 0;
  private windowMaxInFlight = 0;
  /** The no-load latency (ms): the smallest sample since the last probe; Infinity before any. */
  noLoadMs = Infinity;
  /** While the no-load latency is being measured afresh (the limit is `min_limit`). */
  private probing = false;
  private probeMinMs = Infinity;
  private probeCount = 0;
  private nextProbeMs: Milliseconds;

  constructor({ minLimit, maxLimit, nowMs }: AdaptiveLimitOptions) {
    this.minLimit = minLimit;
    this.maxLimit = maxLimit;
    this.nowMs = nowMs;
    this.estimate = Math.min(maxLimit, Math.max(minLimit, INITIAL_LIMIT));
    this.limit = Math.floor(this.estimate);
    const now = nowMs();
    this.windowStartMs = now;
    this.nextProbeMs = now + PROBE_INTERVAL_MS;
  }

  /**
   * One call's latency (an upstream's time to its response head).
   * @param latencyMs - the sample (ms)
   * @param inFlight - calls in flight to the upstream when it was taken
   */
  sample(latencyMs: Milliseconds, inFlight: number): void {
    const now = this.nowMs();
    if (this.probing || now >= this.nextProbeMs) {
      this.probe(now, latencyMs, inFlight);
      return;
    }
    if (latencyMs < this.noLoadMs) this.noLoadMs = latencyMs;
    this.windowSumMs += latencyMs;
    this.windowCount++;
    if (inFlight > this.windowMaxInFlight) this.windowMaxInFlight = inFlight;
    if (now - this.windowStartMs >= WINDOW_MS && this.windowCount >= WINDOW_SAMPLES) {
      this.update(this.windowSumMs / this.windowCount, this.windowMaxInFlight);
      this.windowStartMs = now;
      this.windowSumMs = 0;
      this.windowCount = 0;
      this.windowMaxInFlight = 0;
    }
  }

  /** One sample of the no-load measurement (the first one starts it). */
  private probe(now: Milliseconds, latencyMs: Milliseconds, inFlight: number): void {
    if (!this.probing) {
      this.probing = true;
      this.probeMinMs = Infinity;
      this.probeCount = 0;
      this.limit = this.minLimit;
    }
    // Calls let in before the probe may still queue: only those made at the probe's concurrency count.
    if (inFlight > this.minLimit) return;
    if (latencyMs < this.probeMinMs) this.probeMinMs = latencyMs;
    if (++this.probeCount < WINDOW_SAMPLES) return;
    this.probing = false;
    this.noLoadMs = this.probeMinMs;
    this.limit = Math.floor(this.estimate);
    this.nextProbeMs = now + PROBE_INTERVAL_MS;
    this.windowStartMs = now;
    this.windowSumMs = 0;
    this.windowCount = 0;
    this.windowMaxInFlight = 0;
  }

  /** `Gradient2Limit._update` for one window. */
  private update(averageMs: Milliseconds, maxInFlight: number): void {
    const estimate = this.estimate;
    // `Gradient2Limit`: don't grow while the callers, not the upstream, bound the concurrency.
    if (maxInFlight < estimate / 2) return;
    const ratio = averageMs > 0 ? (RTT_TOLERANCE * this.noLoadMs) / averageMs : 1;
    const gradient = Math.max(0.5, Math.min(1, ratio));
    const target = estimate * gradient + QUEUE_SIZE;
    const next = estimate * (1 - SMOOTHING) + target * SMOOTHING;
    this.estimate = Math.max(this.minLimit, Math.min(this.maxLimit, next));
    this.limit = Math.floor(this.estimate);
  }
}
