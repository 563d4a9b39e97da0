/**
 * SPEC §19's calendar arithmetic exists twice, once per language: `gateway/ratelimit/calendar.ts`
 * (memory store, `RateLimit-Policy`) and `gateway/ratelimit/lua/calendar.lua` (the Redis scripts,
 * on Redis TIME). This property test runs the Lua file as the store loads it (after prologue.lua)
 * through a real redis-server's EVAL, and requires both to give the same period for random
 * instants — uniform over four centuries (months of 28-31 days, leap years 2000 and 2024, 2100 not
 * one), and within a second of a period boundary — and random offsets from -12:00 to +14:00 in
 * whole minutes. Against a model: the start is local midnight (minute/hour aligned), a Monday for
 * `week`, the 1st for `month`; the end of one period is the start of the next.
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PERIODS, type Period } from "../../gateway/config/calendar-periods.js";
import { periodBounds } from "../../gateway/ratelimit/calendar.js";
import { RedisServer } from "../helpers/redis-server.js";

const lua = (name: string): string =>
  readFileSync(new URL(`../../gateway/ratelimit/lua/${name}.lua`, import.meta.url), "utf8");

/** prologue + calendar as the store loads them, then a tail calling period_bounds per triple. */
const SCRIPT = `${lua("prologue")}\n${lua("calendar")}\n
local out = {}
for j = 2, #ARGV, 3 do
  local s, e = period_bounds(tonumber(ARGV[j]), ARGV[j + 1], tonumber(ARGV[j + 2]))
  out[#out + 1] = s
  out[#out + 1] = e
end
return out`;

const MIN_MS = Date.UTC(1900, 0, 1);
const MAX_MS = Date.UTC(2300, 0, 1);
const DAY_MS = 86_400_000;

let redis: RedisServer;
let client: Redis;

beforeAll(async () => {
  redis = await RedisServer.start();
  client = new Redis(redis.port, "127.0.0.1");
});

afterAll(async () => {
  client.disconnect();
  await redis.destroy();
});

interface Sample {
  nowMs: number;
  period: Period;
  offsetMin: number;
}

const period = fc.constantFrom(...PERIODS);
const offsetMin = fc.integer({ min: -12 * 60, max: 14 * 60 });
/** Anywhere in four centuries. */
const anyInstant = fc.integer({ min: MIN_MS, max: MAX_MS });
/** Within a second of midnight on the 1st of a month (every period but `week` starts there). */
const nearBoundary = fc
  .tuple(
    // The century years (2000 leap, 1900/2100/2200 not) often, as a uniform draw rarely hits them.
    fc.oneof(fc.integer({ min: 1900, max: 2299 }), fc.constantFrom(1900, 2000, 2100, 2200, 2024)),
    fc.integer({ min: 0, max: 11 }),
    fc.integer({ min: -1000, max: 1000 }),
  )
  .map(([y, m, d]) => Date.UTC(y, m, 1) + d);
const sample = fc
  .record({ nowMs: fc.oneof(anyInstant, nearBoundary), period, offsetMin })
  // Local time: the boundary instants become the offset's own midnights.
  .map((s): Sample => ({ ...s, nowMs: s.nowMs - s.offsetMin * 60_000 }));

/** The Lua bounds of every sample, in one EVAL. */
async function luaBounds(samples: readonly Sample[]): Promise<[number, number][]> {
  const args = samples.flatMap((s) => [String(s.nowMs), s.period, String(s.offsetMin * 60_000)]);
  const flat = (await client.eval(SCRIPT, 0, "0", ...args)) as number[];
  return samples.map((_, i) => [flat[2 * i]!, flat[2 * i + 1]!]);
}

it("Lua and TypeScript give the same period; it holds the instant and starts where the model says", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(sample, { minLength: 1, maxLength: 64 }), async (samples) => {
      const fromLua = await luaBounds(samples);
      samples.forEach((s, i) => {
        const off = s.offsetMin * 60_000;
        const ts = periodBounds(s.nowMs, s.period, off, { startMs: 0, endMs: 0 });
        expect([ts.startMs, ts.endMs], JSON.stringify(s)).toEqual(fromLua[i]);
        expect(ts.startMs).toBeLessThanOrEqual(s.nowMs);
        expect(ts.endMs).toBeGreaterThan(s.nowMs);
        // The model, in the offset's local time.
        const start = new Date(ts.startMs + off);
        const len = ts.endMs - ts.startMs;
        expect(start.getUTCSeconds() + start.getUTCMilliseconds()).toBe(0);
        if (s.period !== "minute") expect(start.getUTCMinutes()).toBe(0);
        if (s.period === "hour") expect(len).toBe(3_600_000);
        if (s.period === "day" || s.period === "week" || s.period === "month")
          expect(start.getUTCHours()).toBe(0);
        if (s.period === "day") expect(len).toBe(DAY_MS);
        if (s.period === "week") {
          expect(start.getUTCDay()).toBe(1); // Monday
          expect(len).toBe(7 * DAY_MS);
        }
        if (s.period === "month") {
          expect(start.getUTCDate()).toBe(1);
          const y = start.getUTCFullYear();
          const m = start.getUTCMonth();
          const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
          const days = m === 1 ? (leap ? 29 : 28) : [3, 5, 8, 10].includes(m) ? 30 : 31;
          expect(len).toBe(days * DAY_MS);
        }
        // The end of one period is the start of the next, and the last instant before it is in it.
        const next = periodBounds(ts.endMs, s.period, off, { startMs: 0, endMs: 0 });
        expect(next.startMs).toBe(ts.endMs);
        expect(periodBounds(ts.endMs - 1, s.period, off, { startMs: 0, endMs: 0 }).startMs).toBe(ts.startMs);
      });
      // The same two facts on the Lua side.
      const edges = samples.flatMap((s, i) => [
        { ...s, nowMs: fromLua[i]![1] },
        { ...s, nowMs: fromLua[i]![1] - 1 },
      ]);
      const luaEdges = await luaBounds(edges);
      samples.forEach((_, i) => {
        expect(luaEdges[2 * i]![0]).toBe(fromLua[i]![1]);
        expect(luaEdges[2 * i + 1]![0]).toBe(fromLua[i]![0]);
      });
    }),
    { numRuns: 150 },
  );
});

it("covers the months of 28, 29, 30 and 31 days the property draws from, at every offset's edge", async () => {
  // Fixed witnesses beside the random ones: Feb 2023 (28), Feb 2024 (29), Feb 2100 (28: not a
  // leap year), Feb 2000 (29), Apr 2026 (30), Dec 2026 (31), at -12:00, +00:00 and +14:00.
  const months: [number, number, number][] = [
    [2023, 1, 28],
    [2024, 1, 29],
    [2100, 1, 28],
    [2000, 1, 29],
    [2026, 3, 30],
    [2026, 11, 31],
  ];
  const samples: Sample[] = [];
  for (const [y, m] of months)
    for (const offsetMin of [-720, 0, 840])
      samples.push({ nowMs: Date.UTC(y, m, 15) - offsetMin * 60_000, period: "month", offsetMin });
  const fromLua = await luaBounds(samples);
  samples.forEach((s, i) => {
    const days = months[Math.floor(i / 3)]![2];
    expect(fromLua[i]![1] - fromLua[i]![0]).toBe(days * DAY_MS);
    expect(fromLua[i]![0]).toBe(
      Date.UTC(months[Math.floor(i / 3)]![0], months[Math.floor(i / 3)]![1], 1) - s.offsetMin * 60_000,
    );
  });
});
