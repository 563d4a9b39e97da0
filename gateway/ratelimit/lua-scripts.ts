/**
 * The limiter scripts as the Redis store loads and calls them (`lua/*.lua`): their source, the
 * per-window argument, the commands' signature and the reply's decoding. The argument layout is
 * written once, in the scripts' header comments (`lua/sliding_window.lua`).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { LimitStoreError, type Crossing, type Decision, type LimitPolicy } from "./limiter.js";
import { flatWindows, windowSuffixes } from "./storage-keys.js";
import { topKey } from "./top-callers.js";

/** The limiter scripts (`lua/<name>.lua`), by the name the store declares them under. */
export type ScriptName = "sliding_window" | "sliding_log";

/**
 * A limiter script declared once per store: its source (`EVAL`, when Redis does not hold it) and
 * its SHA-1 (`EVALSHA`'s name, Redis's own digest of the source).
 */
export interface DeclaredScript {
  readonly lua: string;
  readonly sha: string;
}

/** Declares `lua` (computes its SHA-1 once). */
export function declareScript(lua: string): DeclaredScript {
  return { lua, sha: createHash("sha1").update(lua).digest("hex") };
}

/** Per-policy argument plan of the Redis store, built once per policy object. */
export interface ScriptPlan {
  /** Key tails per window of the identity (`windowSuffixes`). */
  keySuffixes: readonly string[];
  /**
   * `limit, windowMs` pairs (ARGV[5..]) of the identity's windows; a calendar window's second is
   * {@link windowArg}'s.
   */
  windowArgs: (number | string)[];
  /** The same pairs for every flat window (own, then budgets': SPEC §22). */
  flatArgs: (number | string)[];
  /** Units a call spends (ARGV[3]). */
  cost: number;
  script: ScriptName;
  /** sliding_log: each counted call carries a nonce. */
  log: boolean;
  /**
   * Top-caller sets (SPEC §21) the script updates, KEYS after the windows' (standalone and
   * Sentinel; empty in Cluster and without `top_callers`): one per own calendar window.
   */
  topKeys: readonly string[];
}

/**
 * The argument plan of `policy` (built once per policy object). Thresholds (SPEC §21) ride on every
 * calendar window's argument, the top-caller sets on the identity's own calendar windows'.
 * @param prefix - the store's key prefix with its separator
 * @param tops - the script keeps the top-caller sets (false in Cluster: another slot)
 */
export function scriptPlan(policy: LimitPolicy, prefix: string, tops: boolean): ScriptPlan {
  const thresholds = policy.thresholds ?? [];
  const topKeys: string[] = [];
  const ownArgs = policy.windows.flatMap((w) => {
    if (!tops || policy.topCallers !== true || w.period === undefined)
      return [w.limit, windowArg(w, 0, thresholds)];
    topKeys.push(topKey(prefix, policy.className, w.period));
    return [w.limit, windowArg(w, topKeys.length, thresholds)];
  });
  const budgetArgs = flatWindows(policy)
    .windows.slice(policy.windows.length)
    .flatMap((w) => [w.limit, windowArg(w, 0, thresholds)]);
  return {
    keySuffixes: windowSuffixes(policy),
    windowArgs: ownArgs,
    flatArgs: [...ownArgs, ...budgetArgs],
    cost: policy.cost ?? 1,
    script: policy.algorithm === "sliding_log" ? "sliding_log" : "sliding_window",
    log: policy.algorithm === "sliding_log",
    topKeys,
  };
}

/** Reads `lua/<name>.lua` next to this module (the build copies them to `dist/`). */
function readLua(name: string): string {
  return readFileSync(new URL(`./lua/${name}.lua`, import.meta.url), "utf8");
}

/**
 * A limiter script as one chunk: the shared head (`lua/prologue.lua`: now, count, n), the calendar
 * windows (`lua/calendar.lua`), its own body, then the shared reply (`lua/reply.lua`).
 */
export function luaSource(name: ScriptName): string {
  return `${readLua("prologue")}\n${readLua("calendar")}\n${readLua(name)}\n${readLua("reply")}`;
}

/**
 * A window's ARGV[2i+4]: a sliding window's length (ms), or a calendar window's
 * `<period>:<offset minutes>` (`month:540`), which `lua/calendar.lua` reads, followed, with usage
 * operations (SPEC §21), by `:<top>:<thresholds>`: the top-caller set's position among the KEYS
 * after the windows' (0: none) and `<fraction>@<units>,...`.
 * @param top - the window's top-caller set (from 1), or 0
 * @param thresholds - the policy's fractions (`LimitPolicy.thresholds`), or none
 */
export function windowArg(
  w: LimitPolicy["windows"][number],
  top = 0,
  thresholds: readonly number[] = [],
): number | string {
  if (w.period === undefined) return w.windowS * 1000;
  const base = `${w.period}:${w.offsetMs / 60_000}`;
  if (top === 0 && thresholds.length === 0) return base;
  return `${base}:${top}:${thresholds.map((f) => `${f}@${thresholdUnits(f, w.limit)}`).join(",")}`;
}

/**
 * The count at which `fraction` of `limit` is reached: the smallest integer at or above
 * `fraction × limit`, rounded to 6 decimals first so that 0.7 × 100 (70.00000000000001) is 70.
 */
export function thresholdUnits(fraction: number, limit: number): number {
  return Math.ceil(Math.round(fraction * limit * 1e6) / 1e6);
}

/**
 * The crossings of a count's or a charge's reply (the pairs after the calendar counts whose first
 * element is negative, `lua/reply.lua`), in flat indexes.
 * @param indexes - flat index per window of the call (null: the own windows, in order)
 * @returns the crossings, or undefined when there are none
 */
export function crossingsOf(
  d: Decision,
  reply: readonly number[],
  thresholds: readonly number[],
  indexes: readonly number[] | null,
): Crossing[] | undefined {
  let out: Crossing[] | undefined;
  for (let j = 6; j + 1 < reply.length; j += 2) {
    if (reply[j]! >= 0) continue;
    const callIndex = -reply[j]! - 1;
    let used = 0;
    const counts = d.calendarCounts ?? [];
    for (let k = 0; k + 1 < counts.length; k += 2) if (counts[k] === callIndex) used = counts[k + 1]!;
    (out ??= []).push({
      windowIndex: indexes === null ? callIndex : indexes[callIndex]!,
      threshold: thresholds[reply[j + 1]! - 1]!,
      used,
    });
  }
  return out;
}

/**
 * @param reply - the script's `{ allowed, limit, remaining, reset_at_ms, now_ms, window_index }`
 *   (then, for a peek that asked for them, every window's remaining and reset; after a count or a
 *   charge, `index, count` per calendar window: `Decision.calendarCounts`)
 * @param length - the reply's expected length, or -1 after a count or a charge (any even length
 *   from 6)
 * @throws LimitStoreError when the reply has another shape
 */
export function toDecision(reply: unknown, length: number): Decision {
  const shaped =
    Array.isArray(reply) &&
    (length < 0 ? reply.length >= 6 && reply.length % 2 === 0 : reply.length === length);
  if (!shaped || !allNumbers(reply)) {
    throw new LimitStoreError(`redis: unexpected script reply ${JSON.stringify(reply)}`);
  }
  const [allowed, limit, remaining, resetAtMs, nowMs, windowIndex] = reply as number[];
  const d: Decision = {
    allowed: allowed === 1,
    windowIndex: windowIndex!,
    limit: limit!,
    remaining: remaining!,
    resetAtMs: resetAtMs!,
    nowMs: nowMs!,
    degraded: false,
  };
  if (length < 0 && reply.length > 6) {
    // Calendar counts, then (SPEC §21) crossings, whose first element is negative.
    let end = 6;
    while (end < reply.length && (reply[end] as number) >= 0) end += 2;
    if (end > 6) d.calendarCounts = (reply as number[]).slice(6, end);
  }
  return d;
}

function allNumbers(values: unknown[]): boolean {
  for (let i = 0; i < values.length; i++) if (typeof values[i] !== "number") return false;
  return true;
}
