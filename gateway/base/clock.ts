/**
 * Injected time source (envoyproxy/ratelimit's TimeSource), so tests can move time: the wall clock
 * for what is compared with epoch times (token expiry, windows, `Reset`), a monotonic reading for
 * every duration the gateway measures (request, upstream, limiter and outage durations).
 */
import { performance } from "node:perf_hooks";

/** Milliseconds since the Unix epoch. */
export type EpochMs = number;

/** A span of time in milliseconds (a duration, a timeout, an interval). */
export type Milliseconds = number;

/** A wall clock and a monotonic one. */
export interface Clock {
  /** @returns the current time in epoch milliseconds */
  nowMs(): EpochMs;
  /**
   * @returns a monotonic reading (ms, from an arbitrary origin: only differences mean anything),
   *   for durations; never goes back when the wall clock is set
   */
  monotonicMs(): Milliseconds;
}

function monotonicMs(): Milliseconds {
  return performance.now();
}

/** The process clock. */
export const systemClock: Clock = { nowMs: Date.now, monotonicMs };

/** A clock tests can set and advance. */
export class ManualClock implements Clock {
  constructor(private t: EpochMs = 1_700_000_000_000) {}
  nowMs(): EpochMs {
    return this.t;
  }
  /** Real monotonic time: tests move the wall clock; durations stay what they measured. */
  monotonicMs(): Milliseconds {
    return performance.now();
  }
  /** @param ms - milliseconds to move forward */
  advance(ms: number): void {
    this.t += ms;
  }
  set(t: EpochMs): void {
    this.t = t;
  }
}
