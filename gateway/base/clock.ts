/** Injected time source (envoyproxy/ratelimit's TimeSource), so tests can move time. */

/** Milliseconds since the Unix epoch. */
export type EpochMs = number;

/** A wall clock. */
export interface Clock {
  /** @returns the current time in epoch milliseconds */
  nowMs(): EpochMs;
}

/** The process clock. */
export const systemClock: Clock = { nowMs: Date.now };

/** A clock tests can set and advance. */
export class ManualClock implements Clock {
  constructor(private t: EpochMs = 1_700_000_000_000) {}
  nowMs(): EpochMs {
    return this.t;
  }
  /** @param ms - milliseconds to move forward */
  advance(ms: number): void {
    this.t += ms;
  }
  set(t: EpochMs): void {
    this.t = t;
  }
}
