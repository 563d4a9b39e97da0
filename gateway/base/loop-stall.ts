/**
 * How long this process's event loop has been held up (SPEC §18: "the gateway's own event-loop delay
 * is not the upstream's latency"). The principle of Node's `monitorEventLoopDelay`
 * (node:perf_hooks): a timer that should fire every {@link LOOP_TICK_MS} fires late by as long as
 * the loop was busy. `monitorEventLoopDelay` keeps a histogram of those delays, which cannot say how
 * much of one call's lifetime the loop stood still; this keeps their running total instead, so a
 * call's stall is the difference of two readings, and a reading counts the stall under way (a
 * response head handled right after a synchronous spin, before the timer had its turn). A stall
 * is understated by at most one period, never overstated (a starved process's steady lateness is
 * counted as it is, not as the whole time). The timer runs only while someone reads: it stops
 * after {@link LOOP_IDLE_MS} without a reading, so an idle gateway does not wake up for it.
 */
import type { Clock, Milliseconds } from "./clock.js";

/** The timer's period (ms). */
export const LOOP_TICK_MS: Milliseconds = 2;
/** Lateness below this is timer granularity, not a stall (ms). */
export const LOOP_GRACE_MS: Milliseconds = 1;
/** The timer stops after this long without a reading (ms). */
export const LOOP_IDLE_MS: Milliseconds = 1_000;

/** A running total of event-loop stall, its timer running (unref'd) while it is read. */
export class LoopStall {
  private total: Milliseconds = 0;
  private lastTickMs: Milliseconds = 0;
  private lastReadMs: Milliseconds = 0;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  /** @param clock - its monotonic time */
  constructor(private readonly clock: Pick<Clock, "monotonicMs">) {}

  /**
   * @returns the stall so far (ms, from an arbitrary origin: only differences mean anything),
   *   including the one under way now
   */
  totalMs(): Milliseconds {
    const now = this.clock.monotonicMs();
    this.lastReadMs = now;
    if (this.timer === null) {
      if (!this.closed) this.arm(now);
      return this.total;
    }
    return this.total + stallOf(now - this.lastTickMs);
  }

  /** Stops the timer (the gateway closes). */
  close(): void {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private arm(now: Milliseconds): void {
    this.lastTickMs = now;
    // From the tick itself the fired timer is re-armed (refresh), not a new one made every 2 ms.
    if (this.timer !== null) {
      this.timer.refresh();
      return;
    }
    this.timer = setTimeout(this.tick, LOOP_TICK_MS);
    this.timer.unref();
  }

  private readonly tick = (): void => {
    const now = this.clock.monotonicMs();
    this.total += stallOf(now - this.lastTickMs);
    if (this.closed || now - this.lastReadMs > LOOP_IDLE_MS) this.timer = null;
    else this.arm(now);
  };
}

/** The stall a gap between two ticks shows: its lateness beyond the grace (ms). */
const stallOf = (gapMs: Milliseconds): Milliseconds => {
  const late = gapMs - LOOP_TICK_MS;
  return late > LOOP_GRACE_MS ? late : 0;
};
