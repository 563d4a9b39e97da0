/**
 * The calendar vocabulary of the configuration (SPEC §19): the periods a window may count over and
 * the syntax of `rate_limits.quota_utc_offset`. The arithmetic on them is `ratelimit/calendar.ts`.
 */

/** The calendar periods a window may count over. */
export const PERIODS = ["minute", "hour", "day", "week", "month"] as const;
export type Period = (typeof PERIODS)[number];

/** `±HH:MM` within -12:00 and +14:00 (the range of the world's time zones). */
const OFFSET = /^([+-])(\d{2}):([0-5]\d)$/;

/**
 * Parses `rate_limits.quota_utc_offset`.
 * @returns the offset east of UTC in minutes, or undefined when it is not `±HH:MM` within
 *   -12:00..+14:00
 */
export function parseUtcOffset(text: string): number | undefined {
  const m = OFFSET.exec(text);
  if (m === null) return undefined;
  const minutes = (m[1] === "-" ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3]));
  return minutes < -12 * 60 || minutes > 14 * 60 ? undefined : minutes;
}
