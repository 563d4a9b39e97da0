/**
 * In-process store (SPEC §4): the same semantics as the Redis store inside one process, with a
 * bounded LRU of keys. JavaScript runs each call to completion, so check-and-count is atomic.
 * Also the failover store while Redis is down, with limits divided by `expected_replicas`.
 */
import { LRUCache } from "lru-cache";
import type { Clock } from "../clock.js";
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

type KeyState = CounterState[] | LogState[];

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  clock: Clock;
  /** Keys (identity × class) kept; least recently used are dropped. @default 100000 */
  maxKeys?: number;
  /** Each limit becomes `ceil(limit / limitDivisor)` (failing open across replicas). @default 1 */
  limitDivisor?: number;
}

/** The memory {@link Limiter}. */
export class MemoryStore implements Limiter {
  private readonly clock: Clock;
  private readonly divisor: number;
  private readonly states: LRUCache<string, KeyState>;
  private readonly verdicts: WindowVerdict[] = [];
  /**
   * Key prefix per policy object: class, algorithm and window lengths, as the Redis keys carry
   * them, so a reload that changes a class's algorithm or windows starts fresh state instead of
   * reading state of another shape.
   */
  private readonly prefixes = new WeakMap<LimitPolicy, string>();

  constructor({ clock, maxKeys = 100_000, limitDivisor = 1 }: MemoryStoreOptions) {
    this.clock = clock;
    this.divisor = limitDivisor;
    this.states = new LRUCache({ max: maxKeys });
  }

  consume(key: string, policy: LimitPolicy): Promise<Decision> {
    return Promise.resolve(this.decide(key, policy, true));
  }

  peek(key: string, policy: LimitPolicy): Promise<Decision> {
    return Promise.resolve(this.decide(key, policy, false));
  }

  close(): Promise<void> {
    this.states.clear();
    return Promise.resolve();
  }

  /** Number of keys held (for tests and metrics). */
  get size(): number {
    return this.states.size;
  }

  private prefixOf(policy: LimitPolicy): string {
    let prefix = this.prefixes.get(policy);
    if (prefix === undefined) {
      prefix = `${policy.name}:${policy.algorithm}:${policy.windows.map((w) => w.windowS).join(",")}\0`;
      this.prefixes.set(policy, prefix);
    }
    return prefix;
  }

  /** Synchronous decision; `count` false reports without counting. */
  decide(key: string, policy: LimitPolicy, count: boolean): Decision {
    const nowMs = this.clock.nowMs();
    const stateKey = this.prefixOf(policy) + key;
    let state = this.states.get(stateKey);
    const windows = policy.windows;
    if (state === undefined) {
      state =
        policy.algorithm === "sliding_log"
          ? windows.map(() => ({ times: [], head: 0 }))
          : windows.map(() => ({ startMs: 0, prev: 0, curr: 0 }));
      if (count) this.states.set(stateKey, state);
    }
    const verdicts = this.verdicts;
    verdicts.length = windows.length;
    let allowed = true;
    for (let i = 0; i < windows.length; i++) {
      const w = windows[i]!;
      const windowMs = w.windowS * 1000;
      const limit = Math.ceil(w.limit / this.divisor);
      let v: WindowVerdict;
      if (policy.algorithm === "sliding_log") {
        const log = state[i] as LogState;
        trimLog(log, nowMs - windowMs);
        v = logVerdict(log.times, log.head, nowMs, windowMs, limit);
      } else {
        const c = state[i] as CounterState;
        rollCounter(c, nowMs, windowMs);
        v = counterVerdict(c, nowMs, windowMs, limit);
      }
      verdicts[i] = v;
      if (!v.fits) allowed = false;
    }
    if (allowed && count) {
      for (let i = 0; i < windows.length; i++) {
        if (policy.algorithm === "sliding_log") (state[i] as LogState).times.push(nowMs);
        else (state[i] as CounterState).curr += 1;
      }
    }
    const r = pickReported(verdicts, allowed);
    const v = verdicts[r]!;
    const limit = Math.ceil(windows[r]!.limit / this.divisor);
    return {
      allowed,
      limit,
      // peek reports what is left now, not after a call
      remaining: count || !allowed ? v.remaining : Math.min(limit, v.remaining + 1),
      resetAtMs: v.resetAtMs,
      nowMs,
      degraded: false,
    };
  }
}

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
