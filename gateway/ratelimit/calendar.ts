/**
 * Calendar periods (SPEC §19): the one place in TypeScript that says where a `minute`, `hour`,
 * `day`, `week` (from Monday 00:00) or `month` (from the 1st, 00:00) starts and ends, for an instant
 * and a fixed UTC offset (`rate_limits.quota_utc_offset`). Its Lua twin is `lua/calendar.lua`; a
 * property test (test/integration/calendar-lua-agrees.test.ts) runs both through a real `redis-server` and
 * requires them to agree. The memory store and `RateLimit-Policy` use this module; the Redis store
 * hands the period and offset to the script, which computes them on Redis `TIME`.
 *
 * A fixed offset has no daylight saving time, so every period but `month` has one length.
 */
import type { Period } from "../config/calendar-periods.js";
import type { CounterState, WindowVerdict } from "./sliding.js";

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/** Length (ms) of every period but `month`, whose length depends on the month. */
const FIXED_MS: Readonly<Record<Exclude<Period, "month">, number>> = Object.freeze({
  minute: MINUTE_MS,
  hour: 3_600_000,
  day: DAY_MS,
  week: 7 * DAY_MS,
});

/** Start and end (exclusive) of one period (epoch ms). */
export interface PeriodBounds {
  startMs: number;
  endMs: number;
}

/** Scratch date for month arithmetic: one per process, so a bound costs no allocation. */
const scratch = new Date(0);

/**
 * The period of `period` that contains `nowMs`, with periods starting at local midnight (and on
 * Mondays, on the 1st) of the fixed offset `offsetMs` east of UTC. Weeks count from 1970-01-05, a
 * Monday; months come from the proleptic Gregorian calendar (`Date.UTC`).
 * @param nowMs - the instant (epoch ms)
 * @param offsetMs - UTC offset (ms; +09:00 is 32,400,000)
 * @param out - receives the bounds (no allocation per call)
 * @returns `out`
 */
export function periodBounds(
  nowMs: number,
  period: Period,
  offsetMs: number,
  out: PeriodBounds,
): PeriodBounds {
  const local = nowMs + offsetMs;
  if (period === "month") {
    scratch.setTime(local);
    const y = scratch.getUTCFullYear();
    const m = scratch.getUTCMonth();
    out.startMs = Date.UTC(y, m, 1) - offsetMs;
    out.endMs = Date.UTC(y, m + 1, 1) - offsetMs;
    return out;
  }
  const len = FIXED_MS[period];
  // 1970-01-01 was a Thursday: weeks are aligned to the Monday four days later.
  const origin = period === "week" ? 4 * DAY_MS : 0;
  const start = local - mod(local - origin, len);
  out.startMs = start - offsetMs;
  out.endMs = start + len - offsetMs;
  return out;
}

/** Modulo whose result has the sign of the divisor (instants before 1970 stay correct). */
function mod(a: number, b: number): number {
  const r = a % b;
  return r < 0 ? r + b : r;
}

/**
 * Length (s) of the period containing `nowMs`: the `w` of `RateLimit-Policy` for a calendar window
 * (28 to 31 days for a month).
 */
export function periodLengthS(nowMs: number, period: Period, offsetMs: number): number {
  if (period !== "month") return FIXED_MS[period] / 1000;
  const b = periodBounds(nowMs, period, offsetMs, { startMs: 0, endMs: 0 });
  return (b.endMs - b.startMs) / 1000;
}

/**
 * Decides one calendar window for a call of `cost` units (the memory store's twin of
 * `calendar_window` in `lua/calendar.lua`): an exact counter per period, admitted while `cost`
 * units are left. `state` is rolled to the period containing `nowMs` (a count of another period is
 * 0). Reset is the period's end, the next one's start, whatever remains (SPEC §19).
 * @param state - `startMs` the period counted, `curr` the units counted in it (`prev` unused)
 * @param scratch - receives the period's bounds
 * @param count - true for a call that counts (remaining after it); false for a peek or a verdict
 *   after a charge (remaining now) @default true
 * @param cost - units a call spends (SPEC §22) @default 1
 */
export function calendarVerdict(
  state: CounterState,
  nowMs: number,
  period: Period,
  offsetMs: number,
  limit: number,
  scratch: PeriodBounds,
  count = true,
  cost = 1,
): WindowVerdict {
  const b = periodBounds(nowMs, period, offsetMs, scratch);
  if (state.startMs !== b.startMs) {
    state.startMs = b.startMs;
    state.prev = 0;
    state.curr = 0;
  }
  return state.curr + cost <= limit
    ? { fits: true, remaining: limit - state.curr - (count ? cost : 0), resetAtMs: b.endMs }
    : { fits: false, remaining: Math.max(0, limit - state.curr), resetAtMs: b.endMs };
}

/** Minutes to the offset in ms. */
export function offsetMsOf(minutes: number): number {
  return minutes * MINUTE_MS;
}
