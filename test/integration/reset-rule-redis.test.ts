/**
 * The Reset rule of SPEC §3 on the Redis store (its clock is Redis `TIME`, so time runs for real):
 * over random call sequences Reset stays within one window while calls remain; after the last unit
 * is used, a call made at Reset is admitted; and the gateway's first answer to a fresh identity
 * (`npm run demo`'s one-hour class) reports a Reset at most one hour ahead. Classes mix in a
 * calendar window (SPEC §19), whose Reset is the next period's start (calendar.ts) on Redis's clock.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { periodBounds } from "../../gateway/ratelimit/calendar.js";
import type { Algorithm, Decision, LimitPolicy, WindowSpec } from "../../gateway/ratelimit/limiter.js";
import { useRedisStore } from "../helpers/redis-store-fixture.js";

const redis = useRedisStore("reset");
const resetS = (d: Decision) => Math.ceil(d.resetAtMs / 1000);
let identities = 0;

describe.each(["sliding_window", "sliding_log"] as const)(
  "the Reset rule on Redis, %s",
  (algorithm: Algorithm) => {
    it("keeps Reset within one window while calls remain, over random sequences", async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.uniqueArray(
            fc.oneof(
              fc.record({ limit: fc.integer({ min: 1, max: 5 }), windowS: fc.constantFrom(1, 2, 60) }),
              fc.record({
                limit: fc.integer({ min: 1, max: 5 }),
                period: fc.constant("minute" as const),
                offsetMs: fc.constantFrom(0, -570 * 60_000),
              }),
            ) as fc.Arbitrary<WindowSpec>,
            { minLength: 1, maxLength: 2, selector: (w) => w.windowS ?? w.period },
          ),
          fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }),
          async (windows, counts) => {
            const policy: LimitPolicy = { className: "r", algorithm, mode: "enforce", windows };
            const key = `sub:prop-${identities++}`;
            for (const count of counts) {
              const d = count ? await redis.store.consume(key, policy) : await redis.store.peek(key, policy);
              const w = windows[d.windowIndex]!;
              if (w.period !== undefined) {
                const b = periodBounds(d.nowMs, w.period, w.offsetMs, { startMs: 0, endMs: 0 });
                expect(d.resetAtMs).toBe(b.endMs);
              } else if (d.remaining > 0) {
                expect(resetS(d)).toBeLessThanOrEqual(Math.ceil(d.nowMs / 1000) + w.windowS);
              } else {
                expect(d.resetAtMs).toBeGreaterThan(d.nowMs);
              }
            }
          },
        ),
        { numRuns: 40 },
      );
    });

    it("admits a call made at Reset after the last unit was used", async () => {
      const policy: LimitPolicy = {
        className: "r",
        algorithm,
        mode: "enforce",
        windows: [{ limit: 2, windowS: 1 }],
      };
      const key = `sub:at-reset-${algorithm}`;
      await redis.store.consume(key, policy);
      const last = await redis.store.consume(key, policy);
      expect(last).toMatchObject({ allowed: true, remaining: 0 });
      const rejected = await redis.store.consume(key, policy);
      expect(rejected.allowed).toBe(false);
      expect(resetS(rejected)).toBe(resetS(last));
      // Wait for Redis's own clock to reach Reset (the one wait here is the thing under test).
      await new Promise((r) => setTimeout(r, resetS(last) * 1000 - last.nowMs + 5));
      expect((await redis.store.consume(key, policy)).allowed).toBe(true);
    });
  },
);

it("reports a fresh identity's first call of an hour class with Reset at most an hour ahead", async () => {
  const policy: LimitPolicy = {
    className: "read",
    algorithm: "sliding_window",
    mode: "enforce",
    windows: [{ limit: 5000, windowS: 3600 }],
  };
  const d = await redis.store.consume("sub:fresh", policy);
  expect(d.remaining).toBe(4999);
  expect(resetS(d) - Math.ceil(d.nowMs / 1000)).toBeLessThanOrEqual(3600);
});
