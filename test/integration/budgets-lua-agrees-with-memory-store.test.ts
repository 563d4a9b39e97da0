/**
 * SPEC §22's counting exists twice: the Lua scripts (`lua/*.lua`, Redis) and their TypeScript twin
 * (`sliding.ts`, `calendar.ts`, `memory-store.ts`). This property test runs random sequences of
 * calls — several users, some of one organisation (a budget level), some without the claim, calls
 * of several costs, peeks, charges that may take a window past its limit, and time moving by random
 * steps across window and period boundaries — through the real scripts on a real redis-server and
 * through the memory store, and requires every decision to be the same (allowed, reported window
 * as a flat index, limit, remaining units, reset). Time is the test's own on both sides: the
 * scripts are loaded with their `TIME` read replaced by a hash the test sets before each call,
 * the rest of every script exactly as the store loads it.
 *
 * Against a model too: the organisation's calendar window holds exactly the units its members
 * were admitted and charged this minute, a call of theirs is refused when fewer than `cost` are
 * left there, and a charge is never refused.
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ManualClock } from "../../gateway/base/clock.js";
import type { Algorithm, BudgetKeys, Decision, LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { MemoryStore } from "../../gateway/ratelimit/memory-store.js";
import { RedisStore } from "../../gateway/ratelimit/redis-store.js";
import { RedisServer } from "../helpers/redis-server.js";

const lua = (name: string): string =>
  readFileSync(new URL(`../../gateway/ratelimit/lua/${name}.lua`, import.meta.url), "utf8");

/** The store's chunk with TIME read from the `faketime` hash (s, us) the test writes. */
function fakeTimeSource(name: string): string {
  const prologue = lua("prologue").replace(
    "local t = redis.call('TIME')",
    "local t = redis.call('HMGET', 'faketime', 's', 'u')",
  );
  expect(prologue).toContain("faketime");
  return `${prologue}\n${lua("calendar")}\n${lua(name)}\n${lua("reply")}`;
}

let server: RedisServer;
let store: RedisStore;

beforeAll(async () => {
  server = await RedisServer.start();
  store = new RedisStore({
    redis: { url: server.url, key_prefix: "prop", command_timeout_ms: 5000 },
    scriptSource: fakeTimeSource,
  });
  await store.started();
});

afterAll(async () => {
  await store?.close();
  await server?.destroy();
});

/** A class with its own windows, an organisation budget (sliding + calendar) and a cost. */
function policyOf(className: string, algorithm: Algorithm, cost: number): LimitPolicy {
  return {
    className,
    algorithm,
    mode: "enforce",
    windows: [{ limit: 12, windowS: 2 }],
    budgets: [
      {
        key: "claim:org_id",
        claim: "org_id",
        windows: [
          { limit: 20, windowS: 3 },
          { limit: 45, period: "minute", offsetMs: 0 },
        ],
      },
    ],
    cost,
  };
}

interface Op {
  user: number;
  /** 0: a count, 1: a peek, 2: a charge. */
  kind: number;
  /** Which of the two classes (cost 1 or the drawn cost). */
  costly: boolean;
  units: number;
  /** Time advanced before the call (ms). */
  stepMs: number;
}

const op: fc.Arbitrary<Op> = fc.record({
  user: fc.integer({ min: 0, max: 3 }),
  kind: fc.oneof(
    { arbitrary: fc.constant(0), weight: 6 },
    { arbitrary: fc.constant(1), weight: 1 },
    { arbitrary: fc.constant(2), weight: 1 },
  ),
  costly: fc.boolean(),
  units: fc.integer({ min: 0, max: 15 }),
  stepMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400 }), fc.integer({ min: 500, max: 4000 })),
});

/** Users 0-2 belong to organisation acme; user 3's token has no `org_id` claim. */
const budgetsOf = (user: number): BudgetKeys => [user < 3 ? "claim:org_id:acme" : null];

const pick = (d: Decision) => ({
  allowed: d.allowed,
  windowIndex: d.windowIndex,
  limit: d.limit,
  remaining: d.remaining,
  resetAtMs: d.resetAtMs,
  // A peek's report per budget level (GET /rate_limit).
  levels: d.levels ?? null,
});

let run = 0;
const BASE_MS = Math.ceil(Date.now() / 60_000) * 60_000 + 3_600_000;

it("the scripts and the memory store decide random calls with costs, budgets and charges alike", async () => {
  const refused = { own: 0, org: 0 };
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom<Algorithm>("sliding_window", "sliding_log"),
      fc.integer({ min: 2, max: 6 }),
      // Anywhere in a minute, so the calendar window's period turns over in some runs; ahead of
      // the real clock, as a calendar key expires at its period's end (PEXPIREAT, real time).
      fc.integer({ min: BASE_MS, max: BASE_MS + 60_000 }),
      fc.array(op, { minLength: 5, maxLength: 40 }),
      async (algorithm, cost, startMs, ops) => {
        run++;
        const policies = [policyOf(`c${run}`, algorithm, 1), policyOf(`k${run}`, algorithm, cost)];
        const clock = new ManualClock(startMs);
        const memory = new MemoryStore({ clock });
        /** Units admitted or charged per organisation calendar minute (the model). */
        const orgUnits = new Map<string, number>();
        for (const [i, o] of ops.entries()) {
          clock.advance(o.stepMs);
          const nowMs = clock.nowMs();
          await store.client.hset("faketime", "s", Math.floor(nowMs / 1000), "u", (nowMs % 1000) * 1000);
          const policy = policies[o.costly ? 1 : 0]!;
          const key = `sub:u${o.user}`;
          const budgets = budgetsOf(o.user);
          const units = Math.max(1, o.units);
          const [r, m] =
            o.kind === 0
              ? [await store.consume(key, policy, null, budgets), memory.decide(key, policy, true, budgets)]
              : o.kind === 1
                ? [await store.peek(key, policy, null, budgets), memory.decide(key, policy, false, budgets)]
                : [
                    await store.charge(key, policy, units, budgets),
                    memory.decide(key, policy, "charge", budgets, units),
                  ];
          expect(r.nowMs).toBe(nowMs);
          expect(pick(r), `op ${i} ${JSON.stringify(o)}`).toEqual(pick(m));
          if (o.kind === 0 && !r.allowed) refused[r.windowIndex === 0 ? "own" : "org"]++;
          const minute = `${policy.className}:${Math.floor(nowMs / 60_000)}`;
          const before = o.user < 3 ? (orgUnits.get(minute) ?? 0) : 0;
          if (o.kind === 2) expect(r.allowed).toBe(true); // a charge is never refused
          if (o.kind === 0 && o.user < 3) {
            // The organisation's calendar minute admits only with `cost` units left in it.
            if (before + policy.cost! > 45) expect(r.allowed).toBe(false);
            if (r.allowed) orgUnits.set(minute, before + policy.cost!);
          }
          if (o.kind === 2 && o.user < 3) orgUnits.set(minute, before + units);
        }
      },
    ),
    { numRuns: 60, endOnFailure: true },
  );
  // The runs reached both levels' limits (else the agreement above proves little).
  expect(refused.own).toBeGreaterThan(0);
  expect(refused.org).toBeGreaterThan(0);
});
