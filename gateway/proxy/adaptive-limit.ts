/**
 * The adaptive concurrency limit of one upstream (SPEC §18). It sheds only on evidence: it starts
 * where it holds no call back and comes down only once the upstream shows it queues.
 *
 * - **Startup** (a fresh limit, a changed `adaptive_concurrency` block, and every re-measurement):
 *   the limit is `max_limit`. After Google's BBR (draft-cardwell-iccrg-bbr-congestion-control,
 *   "Startup"): it ends on the first window in which the calls waited ({@link WAITED_SHARE} of
 *   them, each above
 *   {@link RTT_TOLERANCE} × the no-load latency and {@link RESOLUTION_MS} above it), when the
 *   upstream is saturated, so the rate of its answers is its capacity; the limit becomes that bandwidth-delay product, answers per ms ×
 *   no-load latency × {@link CWND_GAIN} (Little's law: the calls it serves at once, and as much
 *   again for bursts, BBR's `cwnd_gain`; the steady windows then trim what the upstream queues).
 *   A window where more than a tenth of the calls went straight through is no evidence, whatever
 *   its average.
 * - **Steady**: Netflix's concurrency-limits `Gradient2Limit` (concurrency-limits-core/src/main/
 *   java/com/netflix/concurrency/limits/limit/Gradient2Limit.java, windows of `WindowedLimit.java`):
 *
 *     gradient = clamp(max(RTT_TOLERANCE × noLoad, noLoad + RESOLUTION_MS) / windowAverage, 0.5, 1)
 *     target   = limit × gradient + QUEUE_SIZE
 *     limit    = clamp(limit × (1 − SMOOTHING) + target × SMOOTHING, minLimit, maxLimit)
 *
 *   Flat latency grows it by QUEUE_SIZE × SMOOTHING per window; sustained latency at 2× or more
 *   holds it near QUEUE_SIZE / (1 − 0.5) = 8 calls, min_limit permitting.
 * - **No-load latency**: the smallest sample (not `Gradient2Limit`'s average of every sample, which
 *   drifts up under a sustained overload). Every {@link PROBE_INTERVAL_MS} (less up to
 *   {@link JITTER} of it, Envoy's `jitter`, so replicas do not re-measure together) it is forgotten
 *   and taken afresh, as Envoy's adaptive concurrency filter does (source/extensions/filters/http/
 *   adaptive_concurrency/controller/gradient_controller.cc, "minRTT calculation window"), but
 *   without Envoy's pinning of the limit to `min_concurrency` meanwhile: the re-measurement is the
 *   smallest latency of the first {@link WINDOW_SAMPLES} calls sent after the mark to answer, or
 *   of those answering within {@link MEASURE_MS}, whichever ends first, while the limit is back in
 *   startup. Calls sent before the mark do not count (Envoy's "disregard samples from the previous
 *   minRTT epoch"), and no call in flight delays its end.
 * - **The gateway's own delay**: the windows judge a latency less the event loop's stall over the
 *   call (gateway/base/loop-stall.ts), a lower bound of the upstream's latency, while the no-load
 *   latency is the smallest whole latency, an upper bound of the upstream's: each error leans
 *   towards shedding less, so a busy gateway never reads as a queueing upstream. A steady window
 *   mostly made of stall ({@link STALLED_WINDOW_SHARE}) moves the limit neither way.
 */
import type { Clock, Milliseconds } from "../base/clock.js";

/**
 * `Gradient2Limit`'s `rttTolerance` default: latency up to 1.5× the no-load latency is not
 * queueing (keeps the limit from shrinking on jitter), which keeps the admitted calls' latency
 * near 2× no-load at equilibrium, inside SPEC §18's 3×.
 */
export const RTT_TOLERANCE = 1.5;
/**
 * BBR's `cwnd_gain` (2): the limit startup leaves with is twice the calls the upstream serves at
 * once, so bursts of a bursty client, and an answer rate a loaded gateway under-reads, do not shed.
 */
export const CWND_GAIN = 2;
/** `Gradient2Limit`'s `smoothing` default: a new estimate counts for a fifth. */
export const SMOOTHING = 0.2;
/** `Gradient2Limit`'s fixed `queueSize` default: how far the target may exceed the current limit. */
export const QUEUE_SIZE = 4;
/** `WindowedLimit`'s min and max window time (1 s): one steady update per second at most. */
export const WINDOW_MS: Milliseconds = 1_000;
/** `WindowedLimit`'s `windowSize`: a window needs at least 10 samples to count. */
export const WINDOW_SAMPLES = 10;
/** Startup ends on a window where at least this share of the calls waited (one fast call is no veto). */
export const WAITED_SHARE = 0.9;
/** A startup window's shortest time (ms; at least twice the no-load latency too), to read a rate. */
export const STARTUP_WINDOW_MS: Milliseconds = 100;
/** SPEC §18's "at least once a minute" (Envoy's `min_rtt_calc_params.interval` default, 60 s). */
export const PROBE_INTERVAL_MS: Milliseconds = 60_000;
/**
 * A steady window whose samples were more than this share the gateway's own stall moves the limit
 * neither way: its latencies, whole or discounted, are the gateway's more than the upstream's.
 */
export const STALLED_WINDOW_SHARE = 0.25;
/** Envoy's `min_rtt_calc_params.jitter` default: the interval is shortened by up to 15 %. */
export const JITTER = 0.15;
/** SPEC §18: the re-measurement ends within 2 s whatever is in flight. */
export const MEASURE_MS: Milliseconds = 2_000;
/**
 * Latency within this of the no-load latency is never queueing (ms): what a loaded gateway spends
 * on a call's events in loop turns too short to show as a stall, which no measure of the loop
 * tells from the upstream's time.
 */
export const RESOLUTION_MS: Milliseconds = 20;

/** Bounds and clock of one limit. */
export interface AdaptiveLimitOptions {
  /** `adaptive_concurrency.min_limit` (calls). */
  minLimit: number;
  /** `adaptive_concurrency.max_limit` (calls). */
  maxLimit: number;
  /** Its monotonic time, and the re-measurement interval's jitter. */
  clock: Pick<Clock, "monotonicMs" | "random">;
}

/** One upstream's adaptive limit: fed a latency per call, read as {@link limit}. */
export class AdaptiveLimit {
  /** The no-load latency (ms): the smallest sample since the last re-measurement. */
  noLoadMs = Infinity;
  private current: number;
  private estimate: number;
  private startup = true;
  /** When startup last ended (ms): calls sent before it do not feed the steady windows. */
  private steadySinceMs: Milliseconds = -Infinity;
  private readonly minLimit: number;
  private readonly maxLimit: number;
  private readonly clock: Pick<Clock, "monotonicMs" | "random">;
  /** The re-measurement's end (ms), or -Infinity when none is under way. */
  private measureEndsMs: Milliseconds;
  private measured = 0;
  private measureStartMs: Milliseconds;
  private previousNoLoadMs = Infinity;
  private nextMeasureMs: Milliseconds;
  private windowStartMs: Milliseconds;
  private windowSumMs = 0;
  /** The stall discounted from the window's samples (ms). */
  private windowStallMs = 0;
  /** Samples of the window above the queueing latency (startup's evidence). */
  private windowWaited = 0;
  private windowCount = 0;
  private windowMaxInFlight = 0;

  constructor({ minLimit, maxLimit, clock }: AdaptiveLimitOptions) {
    this.minLimit = minLimit;
    this.maxLimit = maxLimit;
    this.clock = clock;
    this.estimate = maxLimit;
    this.current = maxLimit;
    const now = clock.monotonicMs();
    this.windowStartMs = now;
    this.measureStartMs = now;
    this.measureEndsMs = now + MEASURE_MS;
    this.nextMeasureMs = now + this.interval();
  }

  /** The current limit (calls in flight), an integer within the bounds. */
  get limit(): number {
    const now = this.clock.monotonicMs();
    if (now >= this.nextMeasureMs) this.remeasure(now);
    return this.current;
  }

  /** A re-measurement of the no-load latency is under way (at most {@link MEASURE_MS}). */
  get measuring(): boolean {
    const now = this.clock.monotonicMs();
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
    const now = this.clock.monotonicMs();
    if (now >= this.nextMeasureMs) this.remeasure(now);
    if (this.measureEndsMs !== -Infinity) {
      // Envoy (#11579): a call sent before the mark may have queued behind the old limit.
      if (now - latencyMs >= this.measureStartMs) {
        if (latencyMs < this.noLoadMs) this.noLoadMs = latencyMs;
        this.measured++;
      }
      if (this.measured >= WINDOW_SAMPLES || now >= this.measureEndsMs) this.endMeasure(now);
      return;
    }
    if (latencyMs < this.noLoadMs) this.noLoadMs = latencyMs;
    // BBR's "Drain": calls sent during startup queued behind its flood; they say nothing of the limit.
    if (!this.startup && now - latencyMs < this.steadySinceMs) return;
    const ms = stallMs > 0 ? Math.max(0, latencyMs - stallMs) : latencyMs;
    this.windowSumMs += ms;
    this.windowStallMs += latencyMs - ms;
    this.windowCount++;
    if (ms > this.queueingMs()) this.windowWaited++;
    if (inFlight > this.windowMaxInFlight) this.windowMaxInFlight = inFlight;
    if (this.windowCount < WINDOW_SAMPLES) return;
    const elapsed = now - this.windowStartMs;
    if (this.startup) {
      if (elapsed < Math.max(STARTUP_WINDOW_MS, 2 * this.noLoadMs)) return;
      if (this.windowWaited >= WAITED_SHARE * this.windowCount)
        this.leaveStartup(this.windowCount / elapsed, now);
    } else {
      if (elapsed < WINDOW_MS) return;
      // A window mostly made of the gateway's own stall says nothing of the upstream, either way.
      if (this.windowStallMs <= STALLED_WINDOW_SHARE * (this.windowSumMs + this.windowStallMs))
        this.update(this.windowSumMs / this.windowCount, this.windowMaxInFlight);
    }
    this.resetWindow(now);
  }

  /** Nine calls in ten of a window waited: the upstream is saturated and answers at its capacity. */
  private leaveStartup(answersPerMs: number, now: Milliseconds): void {
    this.startup = false;
    this.steadySinceMs = now;
    const bdp = answersPerMs * this.noLoadMs * CWND_GAIN;
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

  /** The time to the next mark (ms): at most {@link PROBE_INTERVAL_MS} (SPEC §18). */
  private interval(): Milliseconds {
    return PROBE_INTERVAL_MS * (1 - JITTER * this.clock.random());
  }

  /** The mark: forget the no-load latency, measure it afresh, and start over from `max_limit`. */
  private remeasure(now: Milliseconds): void {
    this.previousNoLoadMs = this.noLoadMs;
    this.noLoadMs = Infinity;
    this.measured = 0;
    this.measureStartMs = now;
    this.measureEndsMs = now + MEASURE_MS;
    this.nextMeasureMs = now + this.interval();
    this.startup = true;
    this.estimate = this.maxLimit;
    this.current = this.maxLimit;
  }

  private endMeasure(now: Milliseconds): void {
    // No call sent since the mark answered in time (only long calls in flight): keep the old one.
    if (this.noLoadMs === Infinity) this.noLoadMs = this.previousNoLoadMs;
    this.measureEndsMs = -Infinity;
    this.resetWindow(now);
  }

  private resetWindow(now: Milliseconds): void {
    this.windowStartMs = now;
    this.windowSumMs = 0;
    this.windowStallMs = 0;
    this.windowWaited = 0;
    this.windowCount = 0;
    this.windowMaxInFlight = 0;
  }
}
