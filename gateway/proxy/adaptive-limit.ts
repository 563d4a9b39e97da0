/**
 * The adaptive concurrency limit of one upstream (SPEC §18). It sheds only on evidence: it starts
 * where it holds no call back and comes down only once the upstream shows it queues.
 *
 * - **Startup** (a fresh limit, a changed `adaptive_concurrency` block, and every re-measurement):
 *   the limit is `max_limit`. After Google's BBR (draft-cardwell-iccrg-bbr-congestion-control,
 *   "Startup"): it ends on the first window in which every call waited (each sample above
 *   {@link RTT_TOLERANCE} × the no-load latency and {@link RESOLUTION_MS} above it), when the upstream is saturated, so the rate of
 *   its answers is its capacity; the limit becomes that bandwidth-delay product, answers per ms ×
 *   no-load latency × {@link RTT_TOLERANCE} (Little's law: the calls it serves at once, plus room).
 *   A window where some call went straight through is no evidence, whatever the average.
 * - **Steady**: Netflix's concurrency-limits `Gradient2Limit` (concurrency-limits-core/src/main/
 *   java/com/netflix/concurrency/limits/limit/Gradient2Limit.java, windows of `WindowedLimit.java`):
 *
 *     gradient = clamp(RTT_TOLERANCE × noLoad / windowAverage, 0.5, 1)
 *     target   = limit × gradient + QUEUE_SIZE
 *     limit    = clamp(limit × (1 − SMOOTHING) + target × SMOOTHING, minLimit, maxLimit)
 *
 *   Flat latency grows it by QUEUE_SIZE × SMOOTHING per window; sustained latency at 2× or more
 *   holds it near QUEUE_SIZE / (1 − 0.5) = 8 calls, min_limit permitting.
 * - **No-load latency**: the smallest clean sample (not `Gradient2Limit`'s average of every sample,
 *   which drifts up under a sustained overload). Every {@link PROBE_INTERVAL_MS} it is forgotten
 *   and taken afresh, as Envoy's adaptive concurrency filter does (source/extensions/filters/http/
 *   adaptive_concurrency/controller/gradient_controller.cc, "minRTT calculation window"), but
 *   without Envoy's pinning of the limit to `min_concurrency` meanwhile: the re-measurement is the
 *   smallest of the next {@link WINDOW_SAMPLES} clean samples or of {@link MEASURE_MS}, whichever
 *   ends first, while the limit is back in startup. Calls in flight neither delay nor count in it.
 * - **The gateway's own delay**: a sample is the time to the response head less the event loop's
 *   stall over the call (gateway/base/loop-stall.ts), a lower bound of the upstream's latency, so
 *   a busy gateway never reads as a queueing upstream; only a sample the stall barely touched
 *   ({@link CLEAN_STALL_SHARE}) may set the no-load latency, which a lower bound would understate.
 */
import type { Milliseconds } from "../base/clock.js";

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
/** `WindowedLimit`'s min and max window time (1 s): one steady update per second at most. */
export const WINDOW_MS: Milliseconds = 1_000;
/** `WindowedLimit`'s `windowSize`: a window needs at least 10 samples to count. */
export const WINDOW_SAMPLES = 10;
/** A startup window's shortest time (ms; at least twice the no-load latency too), to read a rate. */
export const STARTUP_WINDOW_MS: Milliseconds = 100;
/** SPEC §18's "at least once a minute" (Envoy's `min_rtt_calc_params.interval` default, 60 s). */
export const PROBE_INTERVAL_MS: Milliseconds = 60_000;
/** SPEC §18: the re-measurement ends within 2 s whatever is in flight. */
export const MEASURE_MS: Milliseconds = 2_000;
/**
 * Latency within this of the no-load latency is never queueing (ms): what a loaded gateway spends
 * on a call's events in loop turns too short to show as a stall, which no measure of the loop
 * tells from the upstream's time.
 */
export const RESOLUTION_MS: Milliseconds = 20;
/** A sample whose call saw the loop stall more than this share of it never sets the no-load latency. */
export const CLEAN_STALL_SHARE = 0.1;

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
  /** The no-load latency (ms): the smallest clean sample since the last re-measurement. */
  noLoadMs = Infinity;
  private current: number;
  private estimate: number;
  private startup = true;
  private readonly minLimit: number;
  private readonly maxLimit: number;
  private readonly nowMs: () => Milliseconds;
  /** The re-measurement's end (ms), or -Infinity when none is under way. */
  private measureEndsMs: Milliseconds;
  private measured = 0;
  private previousNoLoadMs = Infinity;
  private nextMeasureMs: Milliseconds;
  private windowStartMs: Milliseconds;
  private windowSumMs = 0;
  private windowMinMs = Infinity;
  private windowCount = 0;
  private windowMaxInFlight = 0;

  constructor({ minLimit, maxLimit, nowMs }: AdaptiveLimitOptions) {
    this.minLimit = minLimit;
    this.maxLimit = maxLimit;
    this.nowMs = nowMs;
    this.estimate = maxLimit;
    this.current = maxLimit;
    const now = nowMs();
    this.windowStartMs = now;
    this.measureEndsMs = now + MEASURE_MS;
    this.nextMeasureMs = now + PROBE_INTERVAL_MS;
  }

  /** The current limit (calls in flight), an integer within the bounds. */
  get limit(): number {
    if (this.nowMs() >= this.nextMeasureMs) this.remeasure(this.nowMs());
    return this.current;
  }

  /** A re-measurement of the no-load latency is under way (at most {@link MEASURE_MS}). */
  get measuring(): boolean {
    const now = this.nowMs();
    if (now >= this.nextMeasureMs) this.remeasure(now);
    if (this.measureEndsMs !== -Infinity && now >= this.measureEndsMs) this.endMeasure(now);
    return this.measureEndsMs !== -Infinity;
  }

  /** While no queueing has been seen since the start or the last re-measurement (limit `max_limit`). */
  get starting(): boolean {
    return this.startup;
  }

  /**
   * One call's latency (an upstream's time to its response head).
   * @param latencyMs - the sample (ms)
   * @param inFlight - calls in flight to the upstream when it was taken
   * @param stallMs - how long the gateway's event loop stood still during the call (ms)
   */
  sample(latencyMs: Milliseconds, inFlight: number, stallMs: Milliseconds = 0): void {
    const now = this.nowMs();
    if (now >= this.nextMeasureMs) this.remeasure(now);
    const clean = stallMs <= CLEAN_STALL_SHARE * latencyMs;
    const ms = stallMs > 0 ? Math.max(0, latencyMs - stallMs) : latencyMs;
    if (clean && ms < this.noLoadMs) this.noLoadMs = ms;
    if (this.measureEndsMs !== -Infinity) {
      if (clean) this.measured++;
      if (this.measured >= WINDOW_SAMPLES || now >= this.measureEndsMs) this.endMeasure(now);
      return;
    }
    this.windowSumMs += ms;
    this.windowCount++;
    if (ms < this.windowMinMs) this.windowMinMs = ms;
    if (inFlight > this.windowMaxInFlight) this.windowMaxInFlight = inFlight;
    if (this.windowCount < WINDOW_SAMPLES) return;
    const elapsed = now - this.windowStartMs;
    if (this.startup) {
      if (elapsed < Math.max(STARTUP_WINDOW_MS, 2 * this.noLoadMs)) return;
      if (this.windowMinMs > this.queueingMs()) this.leaveStartup(this.windowCount / elapsed);
    } else {
      if (elapsed < WINDOW_MS) return;
      this.update(this.windowSumMs / this.windowCount, this.windowMaxInFlight);
    }
    this.resetWindow(now);
  }

  /** Every call of a window waited: the upstream is saturated and answers at its capacity. */
  private leaveStartup(answersPerMs: number): void {
    this.startup = false;
    const bdp = answersPerMs * this.noLoadMs * RTT_TOLERANCE;
    this.estimate = Math.max(this.minLimit, Math.min(this.maxLimit, bdp));
    this.current = Math.floor(this.estimate);
  }

  /** `Gradient2Limit._update` for one window. */
  private update(averageMs: Milliseconds, maxInFlight: number): void {
    const estimate = this.estimate;
    // `Gradient2Limit`: don't move while the callers, not the upstream, bound the concurrency.
    if (maxInFlight < estimate / 2) return;
    const ratio = averageMs > 0 ? this.queueingMs() / averageMs : 1;
    const gradient = Math.max(0.5, Math.min(1, ratio));
    const target = estimate * gradient + QUEUE_SIZE;
    const next = estimate * (1 - SMOOTHING) + target * SMOOTHING;
    this.estimate = Math.max(this.minLimit, Math.min(this.maxLimit, next));
    this.current = Math.floor(this.estimate);
  }

  /** The latency above which a call waited: `RTT_TOLERANCE` × no-load, and {@link RESOLUTION_MS} above it. */
  private queueingMs(): Milliseconds {
    const noLoad = this.noLoadMs;
    return Math.max(RTT_TOLERANCE * noLoad, noLoad + RESOLUTION_MS);
  }

  /** The mark: forget the no-load latency, measure it afresh, and start over from `max_limit`. */
  private remeasure(now: Milliseconds): void {
    this.previousNoLoadMs = this.noLoadMs;
    this.noLoadMs = Infinity;
    this.measured = 0;
    this.measureEndsMs = now + MEASURE_MS;
    this.nextMeasureMs = now + PROBE_INTERVAL_MS;
    this.startup = true;
    this.estimate = this.maxLimit;
    this.current = this.maxLimit;
  }

  private endMeasure(now: Milliseconds): void {
    // No clean answer within the time (only long calls in flight, or a busy gateway): keep the old.
    if (this.noLoadMs === Infinity) this.noLoadMs = this.previousNoLoadMs;
    this.measureEndsMs = -Infinity;
    this.resetWindow(now);
  }

  private resetWindow(now: Milliseconds): void {
    this.windowStartMs = now;
    this.windowSumMs = 0;
    this.windowMinMs = Infinity;
    this.windowCount = 0;
    this.windowMaxInFlight = 0;
  }
}
