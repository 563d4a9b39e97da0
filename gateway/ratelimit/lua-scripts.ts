/**
 * The limiter scripts as the Redis store loads and calls them (`lua/*.lua`): their source, the
 * per-window argument, the commands' signature and the reply's decoding. The argument layout is
 * written once, in the scripts' header comments (`lua/sliding_window.lua`).
 */
import { readFileSync } from "node:fs";
import { LimitStoreError, type Decision, type LimitPolicy } from "./limiter.js";

/**
 * A script registered with `defineCommand` (variable key count: `numKeys` first). ioredis flattens
 * array arguments one level (its `Command` constructor), so keys and window pairs go as arrays.
 */
export type ScriptCommand = (
  numKeys: number,
  keys: readonly string[],
  mode: "1" | "0" | "2",
  nonce: string,
  cost: number,
  units: number,
  windowArgs: readonly (number | string)[],
) => Promise<unknown>;

/** The commands the Redis store defines on its client. */
export interface ScriptCommands {
  rlSlidingWindow: ScriptCommand;
  rlSlidingLog: ScriptCommand;
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
  script: keyof ScriptCommands;
  /** sliding_log: each counted call carries a nonce. */
  log: boolean;
}

/** Reads `lua/<name>.lua` next to this module (the build copies them to `dist/`). */
function readLua(name: string): string {
  return readFileSync(new URL(`./lua/${name}.lua`, import.meta.url), "utf8");
}

/**
 * A limiter script as one chunk: the shared head (`lua/prologue.lua`: now, count, n), the calendar
 * windows (`lua/calendar.lua`), its own body, then the shared reply (`lua/reply.lua`).
 */
export function luaSource(name: string): string {
  return `${readLua("prologue")}\n${readLua("calendar")}\n${readLua(name)}\n${readLua("reply")}`;
}

/**
 * A window's ARGV[2i+4]: a sliding window's length (ms), or a calendar window's
 * `<period>:<offset minutes>` (`month:540`), which `lua/calendar.lua` reads.
 */
export function windowArg(w: LimitPolicy["windows"][number]): number | string {
  return w.period === undefined ? w.windowS * 1000 : `${w.period}:${w.offsetMs / 60_000}`;
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
  if (length < 0 && reply.length > 6) d.calendarCounts = (reply as number[]).slice(6);
  return d;
}

function allNumbers(values: unknown[]): boolean {
  for (let i = 0; i < values.length; i++) if (typeof values[i] !== "number") return false;
  return true;
}
