/**
 * In-process store (SPEC §4): the same semantics as the Redis store inside one process, with a
 * bounded LRU of keys. JavaScript runs each call to completion, so check-and-count is atomic.
 * Also the failover store while Redis is down, with limits divided by `expected_replicas`.
 */
import { LRUCache } from "lru-cache";
import type { Clock } from "../base/clock.js";
import { calendarVerdict, type PeriodBounds } from "./calendar.js";
import { windowKey } from "./storage-keys.js";
import type { Decision, Limiter, LimitPolicy } from "./limiter.js";
import {
  counterVerdict,
  logVerdict,
  pickReported,
  rollCounter,
  type CounterState,
  type WindowVerdict,
} from "./sliding.js";

/** Timestamps of admitted calls, oldest first; `head` skips expired ones without shifting. */
interface LogState {
  times: number[];
  head: number;
}

type WindowState = CounterState | LogState;

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  clock: Clock;
  /** Windows (identity × class × window) kept; least recently used are dropped. @default 100000 */
  maxKeys?: number;
  /** Each limit becomes `ceil(limit / limitDivisor)` (failing open across replicas). @default 1 */
  limitDivisor?: number;
}

/** The memory {@link Limiter}. */
export class MemoryStore implements Limiter {
  private readonly clock: Clock;
  private readonly divisor: number;
  /** One state per window, under the same key the Redis store uses ({@link windowKey}, no prefix). */
  private readonly states: LRUCache<string, WindowState>;
  private readonly verdicts: WindowVerdict[] = [];
  /** Scratch space of one decision (JavaScript runs it to completion): each window's state and key. */
  private readonly found: WindowState[] = [];
  private readonly keys: string[] = [];
  private readonly bounds: PeriodBounds = { startMs: 0, endMs: 0 };

  constructor({ clock, maxKeys = 100_000, limitDivisor = 1 }: MemoryStoreOptions) {
    this.clock = clock;
    this.divisor = limitDivisor;
    this.states = new LRUCache({ max: maxKeys });
  }

  consume(identityKey: string, policy: LimitPolicy): Promise<Decision> {
    return Promise.resolve(this.decide(identityKey, policy, true));
  }

  peek(identityKey: string, policy: LimitPolicy): Promise<Decision> {
    return Promise.resolve(this.decide(identityKey, policy, false));
  }

  close(): Promise<void> {
    this.states.clear();
    return Promise.resolve();
  }

  /** Number of windows held (for tests and metrics). */
  get size(): number {
    return this.states.size;
  }

  /**
   * Raises a calendar window's count for the period that starts at `startMs` to at least `count`
   * (the failover's spent quotas, SPEC §19); a state of an earlier period is replaced. Counts are
   * against this store's (divided) limit.
   * @param windowIndex - a calendar window of `policy`
   */
  raiseCalendarCount(
    identityKey: string,
    policy: LimitPolicy,
    windowIndex: number,
    startMs: number,
    count: number,
  ): void {
    const key = windowKey("", identityKey, policy, windowIndex);
    const state = this.states.get(key) as CounterState | undefined;
    if (state === undefined || state.startMs !== startMs) {
      this.states.set(key, { startMs, prev: 0, curr: count });
    } else if (state.curr < count) {
      state.curr = count;
    }
  }

  /** Synchronous decision; `count` false reports without counting. */
  decide(identityKey: string, policy: LimitPolicy, count: boolean): Decision {
    const nowMs = this.clock.nowMs();
    const windows = policy.windows;
    const log = policy.algorithm === "sliding_log";
    const verdicts = this.verdicts;
    const found = this.found;
    const keys = this.keys;
    verdicts.length = windows.length;
    found.length = windows.length;
    keys.length = windows.length;
    let allowed = true;
    /** Bit i: window i has no stored state yet. */
    let unstored = 0;
    for (let i = 0; i < windows.length; i++) {
      const w = windows[i]!;
      const limit = Math.ceil(w.limit / this.divisor);
      const key = windowKey("", identityKey, policy, i);
      keys[i] = key;
      // A calendar window is a counter whatever the class's algorithm (calendar.ts).
      const isLog = log && w.period === undefined;
      let state = this.states.get(key);
      if (state === undefined) {
        unstored |= 1 << i;
        state = isLog ? EMPTY_LOG : { startMs: 0, prev: 0, curr: 0 };
      }
      found[i] = state;
      let v: WindowVerdict;
      if (w.period !== undefined) {
        v = calendarVerdict(state as CounterState, nowMs, w.period, w.offsetMs, limit, this.bounds);
      } else if (isLog) {
        const windowMs = w.windowS * 1000;
        const s = state as LogState;
        if (s !== EMPTY_LOG) trimLog(s, nowMs - windowMs);
        v = logVerdict(s.times, s.head, nowMs, windowMs, limit);
      } else {
        const windowMs = w.windowS * 1000;
        const c = state as CounterState;
        rollCounter(c, nowMs, windowMs);
        v = counterVerdict(c, nowMs, windowMs, limit, count);
      }
      verdicts[i] = v;
      if (!v.fits) allowed = false;
    }
    if (allowed && count) {
      for (let i = 0; i < windows.length; i++) {
        let state = found[i]!;
        if (log && windows[i]!.period === undefined) {
          if (state === EMPTY_LOG) state = { times: [], head: 0 };
          (state as LogState).times.push(nowMs);
        } else {
          (state as CounterState).curr += 1;
        }
        // A window's first counted call stores its state; found ones were updated in place.
        if ((unstored & (1 << i)) !== 0) this.states.set(keys[i]!, state);
      }
    }
    found.fill(EMPTY_LOG); // hold no state past the call
    const r = pickReported(verdicts, allowed);
    const v = verdicts[r]!;
    const limit = Math.ceil(windows[r]!.limit / this.divisor);
    return {
      allowed,
      windowIndex: r,
      limit,
      // peek reports what is left now, not after a call
      remaining: count || !allowed ? v.remaining : Math.min(limit, v.remaining + 1),
      resetAtMs: v.resetAtMs,
      nowMs,
      degraded: false,
    };
  }
}

/** The state of a log window never counted in (read-only; never stored). */
const EMPTY_LOG: LogState = Object.freeze({ times: Object.freeze([]) as unknown as number[], head: 0 });

function trimLog(log: LogState, cutoffMs: number): void {
  const t = log.times;
  let h = log.head;
  while (h < t.length && t[h]! <= cutoffMs) h++;
  if (h > 64 && h * 2 > t.length) {
    t.splice(0, h);
    h = 0;
  }
  log.head = h;
}
