/**
 * In-process store (SPEC §4): the same semantics as the Redis store inside one process, with a
 * bounded LRU of keys. JavaScript runs each call to completion, so check-and-count is atomic.
 * Also the failover store while Redis is down, with limits divided by `expected_replicas`.
 * Budgets and costs (SPEC §22) as in the scripts: a call counts `cost` units in its own windows and
 * in every budget's it belongs to, or in none; a charge adds units without a check.
 */
import { LRUCache } from "lru-cache";
import type { Clock } from "../base/clock.js";
import { calendarVerdict, type PeriodBounds } from "./calendar.js";
import { levelStatuses } from "./budgets.js";
import { callIndexes, callKey, flatWindows } from "./storage-keys.js";
import type { BudgetKeys, CountMode, Decision, Limiter, LimitPolicy } from "./limiter.js";
import { MemoryUsageOps, type DecidedWindow } from "./memory-usage-ops.js";
import type { TopCallersReader, TopEntry } from "./top-callers.js";
import type { Period } from "../config/calendar-periods.js";
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
export class MemoryStore implements Limiter, TopCallersReader {
  private readonly clock: Clock;
  private readonly divisor: number;
  /** One state per window, under the same key the Redis store uses (`callKey`, no prefix). */
  private readonly states: LRUCache<string, WindowState>;
  private readonly verdicts: WindowVerdict[] = [];
  /** Scratch space of one decision (JavaScript runs it to completion): each window's state and key. */
  private readonly found: WindowState[] = [];
  private readonly keys: string[] = [];
  private readonly bounds: PeriodBounds = { startMs: 0, endMs: 0 };
  /** Threshold crossings and top callers (SPEC §21), and their scratch of decided windows. */
  /** Notification marks and top callers (SPEC §21), read by the admin store's reset. */
  readonly usage: MemoryUsageOps;
  private readonly decided: DecidedWindow[] = [];
  private readonly decidedPool: DecidedWindow[] = [];

  constructor({ clock, maxKeys = 100_000, limitDivisor = 1 }: MemoryStoreOptions) {
    this.clock = clock;
    this.divisor = limitDivisor;
    this.states = new LRUCache({ max: maxKeys });
    this.usage = new MemoryUsageOps(maxKeys);
  }

  /** The class's top callers of the current period (SPEC §21), on this store's clock. */
  top(className: string, period: Period, n: number): Promise<TopEntry[]> {
    return Promise.resolve(this.usage.tops.top(className, period, n, this.clock.nowMs()));
  }

  consume(
    identityKey: string,
    policy: LimitPolicy,
    _trace?: unknown,
    budgets: BudgetKeys | null = null,
  ): Promise<Decision> {
    return Promise.resolve(this.decide(identityKey, policy, true, budgets));
  }

  peek(
    identityKey: string,
    policy: LimitPolicy,
    _trace?: unknown,
    budgets: BudgetKeys | null = null,
  ): Promise<Decision> {
    return Promise.resolve(this.decide(identityKey, policy, false, budgets));
  }

  charge(
    identityKey: string,
    policy: LimitPolicy,
    units: number,
    budgets: BudgetKeys | null = null,
  ): Promise<Decision> {
    return Promise.resolve(this.decide(identityKey, policy, "charge", budgets, units));
  }

  close(): Promise<void> {
    this.states.clear();
    this.usage.clear();
    return Promise.resolve();
  }

  /** The windows' keys (`callKey` form) `test` accepts, dropped unless `keep` (SPEC §21 resets). */
  forgetWhere(test: (key: string) => boolean, keep = false): string[] {
    const keys = [...this.states.keys()].filter(test);
    if (!keep) for (const k of keys) this.states.delete(k);
    return keys;
  }

  /** Number of windows held (for tests and metrics). */
  get size(): number {
    return this.states.size;
  }

  /**
   * Raises a calendar window's count for the period that starts at `startMs` to at least `count`
   * (the failover's spent quotas, SPEC §19); a state of an earlier period is replaced. Counts are
   * against this store's (divided) limit.
   * @param budgets - the call's budgets (the identity's keys carry the first one's tag, SPEC §22)
   * @param windowIndex - a calendar window of `policy` (one of the identity's own)
   */
  raiseCalendarCount(
    identityKey: string,
    policy: LimitPolicy,
    budgets: BudgetKeys | null,
    windowIndex: number,
    startMs: number,
    count: number,
  ): void {
    const key = callKey("", identityKey, policy, budgets, windowIndex);
    const state = this.states.get(key) as CounterState | undefined;
    if (state === undefined || state.startMs !== startMs) {
      this.states.set(key, { startMs, prev: 0, curr: count });
    } else if (state.curr < count) {
      state.curr = count;
    }
  }

  /**
   * Synchronous decision, the twin of the scripts (`lua/*.lua`).
   * @param mode - true (or `"count"`): admit and count `policy.cost` units; false (`"peek"`):
   *   report without counting; `"charge"`: add `units` to every window, never refused
   * @param budgets - per budget, its storage identity or null (SPEC §22); null without budgets
   * @param units - the units of a charge
   * @returns the decision; `windowIndex` is a flat index (`flatWindows`)
   */
  decide(
    identityKey: string,
    policy: LimitPolicy,
    mode: boolean | CountMode,
    budgets: BudgetKeys | null = null,
    units = 0,
  ): Decision {
    const count = mode === true || mode === "count";
    const charging = mode === "charge";
    const cost = policy.cost ?? 1;
    const nowMs = this.clock.nowMs();
    const flat = flatWindows(policy);
    const indexes = callIndexes(policy, budgets, flat);
    const log = policy.algorithm === "sliding_log";
    const verdicts = this.verdicts;
    const found = this.found;
    const keys = this.keys;
    const n = indexes.length;
    verdicts.length = n;
    found.length = n;
    keys.length = n;
    let allowed = true;
    /** Bit i: window i has no stored state yet. */
    let unstored = 0;
    for (let i = 0; i < n; i++) {
      const w = flat.windows[indexes[i]!]!;
      const limit = Math.ceil(w.limit / this.divisor);
      const key = callKey("", identityKey, policy, budgets, indexes[i]!, flat);
      keys[i] = key;
      // A calendar window is a counter whatever the class's algorithm (calendar.ts).
      const isLog = log && w.period === undefined;
      let state = this.states.get(key);
      if (state === undefined) {
        unstored |= 1 << i;
        state = isLog ? (charging ? { times: [], head: 0 } : EMPTY_LOG) : { startMs: 0, prev: 0, curr: 0 };
      }
      found[i] = state;
      let v: WindowVerdict;
      if (w.period !== undefined) {
        const c = state as CounterState;
        if (charging) {
          calendarVerdict(c, nowMs, w.period, w.offsetMs, limit, this.bounds, false, cost); // rolls
          c.curr += units;
        }
        v = calendarVerdict(c, nowMs, w.period, w.offsetMs, limit, this.bounds, count, cost);
      } else if (isLog) {
        const windowMs = w.windowS * 1000;
        const s = state as LogState;
        if (s !== EMPTY_LOG) trimLog(s, nowMs - windowMs);
        if (charging) for (let u = 0; u < units; u++) s.times.push(nowMs);
        v = logVerdict(s.times, s.head, nowMs, windowMs, limit, count, cost);
      } else {
        const windowMs = w.windowS * 1000;
        const c = state as CounterState;
        rollCounter(c, nowMs, windowMs);
        if (charging) c.curr += units;
        v = counterVerdict(c, nowMs, windowMs, limit, count, cost);
      }
      verdicts[i] = v;
      if (!v.fits) allowed = false;
    }
    if (charging) allowed = true;
    if ((allowed && count) || charging) {
      for (let i = 0; i < n; i++) {
        let state = found[i]!;
        if (count) {
          if (log && flat.windows[indexes[i]!]!.period === undefined) {
            if (state === EMPTY_LOG) state = { times: [], head: 0 };
            const times = (state as LogState).times;
            for (let u = 0; u < cost; u++) times.push(nowMs);
          } else {
            (state as CounterState).curr += cost;
          }
        }
        // A window's first counted call stores its state; found ones were updated in place.
        if ((unstored & (1 << i)) !== 0) this.states.set(keys[i]!, state);
      }
    }
    // SPEC §21, only for policies that ask: the calendar windows' crossings and top callers.
    let crossings: Decision["crossings"];
    if ((count || charging) && (policy.thresholds !== undefined || policy.topCallers === true)) {
      const decided = this.decided;
      decided.length = 0;
      for (let i = 0; i < n; i++) {
        const w = flat.windows[indexes[i]!]!;
        if (w.period === undefined) continue;
        // Scratch entries, one per calendar window, reused from call to call.
        const e = (this.decidedPool[decided.length] ??= {
          index: 0,
          window: w,
          key: "",
          limit: 0,
          used: 0,
          fits: true,
        });
        e.index = indexes[i]!;
        e.window = w;
        e.key = keys[i]!;
        e.limit = Math.ceil(w.limit / this.divisor);
        e.used = (found[i] as CounterState).curr;
        e.fits = verdicts[i]!.fits;
        decided.push(e);
      }
      const admitted = allowed || charging;
      const added = charging ? units : admitted ? cost : 0;
      crossings = this.usage.after(identityKey, policy, decided, admitted, added, count, nowMs);
    }
    found.fill(EMPTY_LOG); // hold no state past the call
    const r = pickReported(verdicts, allowed);
    const v = verdicts[r]!;
    const d: Decision = {
      allowed,
      windowIndex: indexes[r]!,
      limit: Math.ceil(flat.windows[indexes[r]!]!.limit / this.divisor),
      remaining: v.remaining,
      resetAtMs: v.resetAtMs,
      nowMs,
      degraded: false,
    };
    if (crossings !== undefined) d.crossings = crossings;
    // A peek with budgets reports each level too (SPEC §22, GET /rate_limit).
    if (mode === false || mode === "peek") {
      if (budgets !== null) {
        const limits = indexes.map((i) => Math.ceil(flat.windows[i]!.limit / this.divisor));
        const rems = verdicts.map((x) => x.remaining);
        d.levels = levelStatuses(
          policy,
          budgets,
          indexes,
          limits,
          rems,
          verdicts.map((x) => x.resetAtMs),
        );
      }
    }
    return d;
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
