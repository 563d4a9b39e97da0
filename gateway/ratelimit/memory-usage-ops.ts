/**
 * The memory store's twin of the scripts' usage operations (SPEC §21, `lua/calendar.lua`):
 * threshold crossings of calendar windows, reported once per key, period and threshold, and the
 * top-caller sets. Called by `MemoryStore.decide` once a count or a charge is decided, and only for
 * policies that ask for either, so other calls do no extra work.
 */
import { LRUCache } from "lru-cache";
import { periodBounds, type PeriodBounds } from "./calendar.js";
import type { Crossing, LimitPolicy, WindowSpec } from "./limiter.js";
import { thresholdUnits } from "./lua-scripts.js";
import { MemoryTopCallers } from "./top-callers.js";

/** What one decided window says (the memory store's scratch). */
export interface DecidedWindow {
  /** Flat index of the window. */
  index: number;
  window: WindowSpec;
  /** Its storage key (`callKey`). */
  key: string;
  /** The window's limit as this store enforces it (divided while failing open). */
  limit: number;
  /** Units counted in its current period after the call. */
  used: number;
  fits: boolean;
}

/** Crossings and top callers of one memory store. */
export class MemoryUsageOps {
  /**
   * Per window key, per threshold (the fraction itself, as the Redis script's `n0.8` field, so a
   * reload that changes the list keeps every mark): the start of the period notified. Made at the
   * first crossing (lru-cache sizes its arrays for `max` up front: nothing for a store, such as
   * the fallback behind Redis, that never notifies).
   */
  private notified: LRUCache<string, Map<number, number>> | null = null;
  private readonly maxKeys: number;
  readonly tops: MemoryTopCallers;
  private readonly bounds: PeriodBounds = { startMs: 0, endMs: 0 };

  /** @param maxKeys - the memory store's bound, applied to each structure */
  constructor(maxKeys: number) {
    this.maxKeys = maxKeys;
    this.tops = new MemoryTopCallers(maxKeys);
  }

  /**
   * @param admitted - the call was counted (or is a charge)
   * @param added - units the call added (its cost, or a charge's units; 0 when refused)
   * @param count - a counting call (a refusal by a window crosses the threshold of fraction 1)
   * @returns the crossings, or undefined when none
   */
  after(
    identityKey: string,
    policy: LimitPolicy,
    windows: readonly DecidedWindow[],
    admitted: boolean,
    added: number,
    count: boolean,
    nowMs: number,
  ): Crossing[] | undefined {
    const thresholds = policy.thresholds ?? [];
    let out: Crossing[] | undefined;
    for (const w of windows) {
      const period = w.window.period;
      if (period === undefined) continue;
      const b = periodBounds(nowMs, period, w.window.offsetMs!, this.bounds);
      if (admitted && policy.topCallers === true && w.index < policy.windows.length)
        this.tops.record(policy.className, period, b.startMs, b.endMs, identityKey, w.used);
      for (let k = 0; k < thresholds.length; k++) {
        const u = thresholdUnits(thresholds[k]!, w.limit);
        const hit = admitted ? w.used - added < u && u <= w.used : count && !w.fits && thresholds[k] === 1;
        if (!hit) continue;
        const notified = (this.notified ??= new LRUCache({ max: this.maxKeys }));
        let marks = notified.get(w.key);
        if (marks === undefined) notified.set(w.key, (marks = new Map()));
        if (marks.get(thresholds[k]!) === b.startMs) continue;
        marks.set(thresholds[k]!, b.startMs);
        (out ??= []).push({ windowIndex: w.index, threshold: thresholds[k]!, used: w.used });
      }
    }
    return out;
  }

  /**
   * Forgets what a reset of `identity` deleted (SPEC §21): the notification marks of its window
   * `keys` (so its next crossing is notified again, as the Redis store's marks live in the deleted
   * window hashes) and its place in the top sets of `classes`.
   */
  forget(identity: string, keys: readonly string[], classes: readonly string[]): void {
    if (this.notified !== null) for (const k of keys) this.notified.delete(k);
    this.tops.forget(identity, classes);
  }

  clear(): void {
    this.notified?.clear();
    this.tops.clear();
  }
}
