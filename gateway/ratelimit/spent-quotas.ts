/**
 * A spent quota stays spent when Redis fails (SPEC §19). While Redis answers, this keeps, per
 * caller and calendar window, the last count its replies gave for the current period
 * ({@link Decision.calendarCounts}); while failing open, the fallback memory store's count of that
 * window starts from it instead of from zero, so a caller who used 9,990 of a monthly 10,000 gets
 * about 10 more calls, not another 10,000, and a caller seen over the limit stays refused until
 * the period ends.
 *
 * With `expected_replicas` d > 1 the fallback enforces ceil(limit / d) per replica; the count it
 * starts from leaves this replica its share of what is left: ceil(limit / d) − ceil((limit − seen) / d)
 * (with d = 1, exactly the count seen).
 *
 * Bounded like the memory store (an LRU of `maxKeys` windows); what it holds past its period is
 * ignored. A count seen only by another replica is not known here: each replica starts from what it
 * saw last (SPEC: "the last count this replica saw").
 */
import { LRUCache } from "lru-cache";
import { periodBounds, type PeriodBounds } from "./calendar.js";
import type { BudgetKeys, Decision, LimitPolicy } from "./limiter.js";
import type { MemoryStore } from "./memory-store.js";
import { windowKey } from "./storage-keys.js";

/** What a reply said of one calendar window. */
interface Seen {
  /** Start and end (exclusive) of the period the count belongs to (epoch ms, Redis time). */
  startMs: number;
  endMs: number;
  /** Calls counted in that period (shared, over every replica). */
  count: number;
}

/** Options of {@link SpentQuotas}. */
export interface SpentQuotasOptions {
  /** Windows kept (LRU). @default 100000 */
  maxKeys?: number;
  /** `expected_replicas`: the fallback's limits are divided by it. @default 1 */
  limitDivisor?: number;
}

/** The calendar counts a replica last saw, and the seeding of the fallback from them. */
export class SpentQuotas {
  private readonly seen: LRUCache<string, Seen>;
  private readonly divisor: number;
  private readonly bounds: PeriodBounds = { startMs: 0, endMs: 0 };

  constructor({ maxKeys = 100_000, limitDivisor = 1 }: SpentQuotasOptions = {}) {
    this.seen = new LRUCache({ max: maxKeys });
    this.divisor = limitDivisor;
  }

  /**
   * Forgets the counts seen for `identity` (its counts were reset or its limits changed, SPEC §21),
   * or for every identity with null (which changed is not known): its next shared reply tells them
   * again. Walks the keys.
   */
  forget(identity: string | null): void {
    if (identity === null) return this.seen.clear();
    const tag = `{${identity}}`;
    for (const k of [...this.seen.keys()]) if (k.startsWith(tag)) this.seen.delete(k);
  }

  /** Number of windows held (tests). */
  get size(): number {
    return this.seen.size;
  }

  /** Keeps the calendar counts of a shared store's decision (nothing when it has none). */
  record(identityKey: string, policy: LimitPolicy, d: Decision): void {
    const counts = d.calendarCounts;
    if (counts === undefined) return;
    for (let j = 0; j + 1 < counts.length; j += 2) {
      const i = counts[j]!;
      const w = policy.windows[i];
      if (w?.period === undefined) continue;
      const b = periodBounds(d.nowMs, w.period, w.offsetMs, this.bounds);
      this.seen.set(windowKey("", identityKey, policy, i), {
        startMs: b.startMs,
        endMs: b.endMs,
        count: counts[j + 1]!,
      });
    }
  }

  /**
   * Before a degraded call: raises each calendar window's count in `fallback` to what was last
   * seen for the current period.
   * @param nowMs - the fallback's clock (epoch ms)
   */
  seed(
    identityKey: string,
    policy: LimitPolicy,
    budgets: BudgetKeys | null,
    fallback: MemoryStore,
    nowMs: number,
  ): void {
    for (let i = 0; i < policy.windows.length; i++) {
      const w = policy.windows[i]!;
      if (w.period === undefined) continue;
      const s = this.seen.get(windowKey("", identityKey, policy, i));
      if (s === undefined || nowMs < s.startMs || nowMs >= s.endMs) continue;
      const share = Math.ceil(w.limit / this.divisor);
      const left = Math.ceil(Math.max(0, w.limit - s.count) / this.divisor);
      fallback.raiseCalendarCount(identityKey, policy, budgets, i, s.startMs, share - left);
    }
  }
}
