/**
 * Top callers (SPEC §21 `GET /usage/top`): per class and calendar period, every identity's count
 * in the current period, kept by the limiter as it counts, so the N heaviest callers are read
 * exactly (the very counts the limiter enforces), never estimated.
 *
 * Redis: one sorted set per class and period, `<key_prefix>:top:<class>:<period>`, member the
 * identity (`sub:alice`), score its count in the period. The limiter script sets the score
 * (`ZADD`, the count after the call: exact and idempotent) in the same round trip as the count, and
 * the set expires when its period ends (`lua/calendar.lua`). Redis Cluster: a script's keys must
 * share a slot and an identity's keys carry its own hash tag, so the set cannot be one of the
 * script's keys; there the store sends `ZADD GT` with the count from the script's reply as a
 * separate command nobody waits for (`redis-store.ts`): one more command per counted call on the
 * set's node, off the request path, and a lost one is repaired by the identity's next call.
 *
 * Memory store: {@link MemoryTopCallers}, the same counts in a map per class and period.
 */
import type { Period } from "../config/calendar-periods.js";

/** Largest N of `GET /usage/top`. */
export const MAX_TOP = 100;

/** One line of the top list. */
export interface TopEntry {
  /** The storage identity (`sub:alice`, `client:ci-bot`). */
  identity: string;
  /** Units counted in the current period. */
  used: number;
}

/** Reads a class's top callers in a period. */
export interface TopCallersReader {
  /**
   * @param n - 1 to {@link MAX_TOP}
   * @returns at most `n` identities, heaviest first (ties: identity descending, as `ZREVRANGE`)
   * @throws LimitStoreError (as a rejection) when the store cannot answer
   */
  top(className: string, period: Period, n: number): Promise<TopEntry[]>;
}

/** The Redis key of a class's top-caller set of one period kind. */
export function topKey(prefix: string, className: string, period: Period): string {
  return `${prefix}top:${className}:${period}`;
}

/** `ZREVRANGE ... WITHSCORES` reply to entries. */
export function topEntries(flat: readonly string[]): TopEntry[] {
  const out: TopEntry[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push({ identity: flat[i]!, used: Number(flat[i + 1]) });
  return out;
}

interface PeriodSet {
  startMs: number;
  endMs: number;
  counts: Map<string, number>;
}

/**
 * The memory store's top callers: per class and period kind, the counts of the current period
 * (a set of an ended period is dropped when next written or read). At most `maxMembers` identities
 * per set (the memory store's own bound on what it remembers): a new identity beyond is not added.
 */
export class MemoryTopCallers {
  /** Per class, per period kind (nested maps: no key built per call). */
  private readonly sets = new Map<string, Map<Period, PeriodSet>>();

  constructor(private readonly maxMembers: number) {}

  /** Records `identity`'s count after a call in the period `[startMs, endMs)`. */
  record(
    className: string,
    period: Period,
    startMs: number,
    endMs: number,
    identity: string,
    used: number,
  ): void {
    let byPeriod = this.sets.get(className);
    if (byPeriod === undefined) {
      byPeriod = new Map();
      this.sets.set(className, byPeriod);
    }
    let set = byPeriod.get(period);
    if (set === undefined || set.startMs !== startMs) {
      set = { startMs, endMs, counts: new Map() };
      byPeriod.set(period, set);
    }
    if (set.counts.size < this.maxMembers || set.counts.has(identity)) set.counts.set(identity, used);
  }

  /**
   * @param nowMs - the store's clock (epoch ms)
   * @returns at most `n`, heaviest first
   */
  top(className: string, period: Period, n: number, nowMs: number): TopEntry[] {
    const set = this.sets.get(className)?.get(period);
    if (set === undefined || nowMs >= set.endMs || nowMs < set.startMs) return [];
    return [...set.counts]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? 1 : a[0] > b[0] ? -1 : 0))
      .slice(0, n)
      .map(([identity, used]) => ({ identity, used }));
  }

  /** Drops `identity` from every period's set of `classes` (a reset of its counts, SPEC §21). */
  forget(identity: string, classes: readonly string[]): void {
    for (const c of classes) for (const set of this.sets.get(c)?.values() ?? []) set.counts.delete(identity);
  }

  clear(): void {
    this.sets.clear();
  }
}
