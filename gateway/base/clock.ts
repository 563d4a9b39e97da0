/**
 * Injected time and jitter source (envoyproxy/ratelimit's `TimeSource` and `jitterRand`), one
 * required clock handed to every component that needs time, so tests can move it and no code
 * reads `Date.now()`, `performance.now()` or `Math.random()` behind its back: the wall clock for
 * what is compared with epoch times (token expiry, windows, `Reset`, the access line's time), a
 * monotonic reading for every duration and deadline the gateway measures (requests, upstream
 * tries, outlier ejections, the adaptive limit, probes, outages), and uniform draws for jitter
 * (retry backoff, probe and re-measurement intervals).
 */
import { performance } from "node:perf_hooks";

/** Milliseconds since the Unix epoch. */
export type EpochMs = number;

/** A span of time in milliseconds (a duration, a timeout, an interval). */
export type Milliseconds = number;

/** A wall clock, a monotonic one, and a jitter source. */
export interface Clock {
  /** @returns the current time in epoch milliseconds (the wall clock) */
  nowMs(): EpochMs;
  /**
   * @returns a monotonic reading (ms, from an arbitrary origin: only differences mean anything),
   *   for durations; never goes back when the wall clock is set. The one name of monotonic time.
   */
  monotonicMs(): Milliseconds;
  /** @returns a uniform draw in [0, 1), for jitter */
  random(): number;
}

function monotonicMs(): Milliseconds {
  return performance.now();
}

/** The process clock. */
export const systemClock: Clock = { nowMs: Date.now, monotonicMs, random: Math.random };

/**
 * A clock tests can set and advance: the wall clock stands still between moves;
 * {@link ManualClock.advance} moves the wall and the monotonic readings together, and
 * {@link ManualClock.set} the wall clock only (as an operator setting the time would). The
 * monotonic reading also runs with real time, so durations measure what they took.
 */
export class ManualClock implements Clock {
  /** Milliseconds {@link advance} added to the monotonic reading. */
  private advancedMs = 0;

  /**
   * @param t - the wall clock's start (epoch ms)
   * @param draw - the jitter source (uniform in [0, 1)); `Math.random` by default
   */
  constructor(
    private t: EpochMs = 1_700_000_000_000,
    private readonly draw: () => number = Math.random,
  ) {}
  nowMs(): EpochMs {
    return this.t;
  }
  monotonicMs(): Milliseconds {
    return performance.now() + this.advancedMs;
  }
  random(): number {
    return this.draw();
  }
  /** @param ms - milliseconds to move both readings forward */
  advance(ms: number): void {
    this.t += ms;
    this.advancedMs += ms;
  }
  /** Sets the wall clock (epoch ms); the monotonic reading does not move. */
  set(t: EpochMs): void {
    this.t = t;
  }
}
