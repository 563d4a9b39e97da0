/**
 * SPEC §22 in the memory store (the default store, and the fallback while Redis fails, SPEC §4):
 * an organisation's budget shared by its users, each within their own windows; a token without the
 * claim spends its own windows only; `cost` units per call; a refused call counts nowhere; and
 * while failing open every level's limit is divided by `expected_replicas`, budgets and cost
 * included. Also the configuration's checks, each naming its key path.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../gateway/base/clock.js";
import { describeConfig } from "../../gateway/cli/describe-config.js";
import { gatewayConfigSchema } from "../../gateway/config/schema.js";
import { levelName } from "../../gateway/ratelimit/budgets.js";
import { FailoverLimiter } from "../../gateway/ratelimit/failover.js";
import {
  LimitStoreError,
  type BudgetKeys,
  type Limiter,
  type LimitPolicy,
} from "../../gateway/ratelimit/limiter.js";
import { MemoryStore } from "../../gateway/ratelimit/memory-store.js";
import { callKey } from "../../gateway/ratelimit/storage-keys.js";
import { captureLogger, testMetrics } from "../helpers/redis-limiter.js";

const ACME: BudgetKeys = ["claim:org_id:acme"];
const NONE: BudgetKeys = [null];

const policy = (algorithm: LimitPolicy["algorithm"], cost = 1): LimitPolicy => ({
  className: "read",
  algorithm,
  mode: "enforce",
  windows: [{ limit: 4, windowS: 60 }],
  budgets: [
    {
      key: "claim:org_id",
      claim: "org_id",
      windows: [
        { limit: 6, windowS: 60 },
        { limit: 1000, period: "month", offsetMs: 0 },
      ],
    },
  ],
  cost,
});

describe.each(["sliding_window", "sliding_log"] as const)("memory store, %s", (algorithm) => {
  it("an organisation's users share its budget, each within their own windows", () => {
    const store = new MemoryStore({ clock: new ManualClock(1_000_000) });
    const p = policy(algorithm);
    const seen = (user: string, n: number) =>
      Array.from({ length: n }, () => {
        const d = store.decide(`sub:${user}`, p, true, ACME);
        return `${d.allowed ? "ok" : "429"} ${levelName(p, d.windowIndex)} ${d.remaining}`;
      });
    // ann: 4 of her own, the 5th refused by her own window.
    expect(seen("ann", 5)).toEqual([
      "ok identity 3",
      "ok identity 2",
      "ok identity 1",
      "ok identity 0",
      "429 identity 0",
    ]);
    // ben: 2 left in the organisation's budget, then refused by it with his own room left.
    expect(seen("ben", 3)).toEqual(["ok claim:org_id 1", "ok claim:org_id 0", "429 claim:org_id 0"]);
    // eve, without the claim, spends her own windows only.
    expect(store.decide("sub:eve", p, true, NONE)).toMatchObject({ allowed: true, remaining: 3 });
    // The organisation's keys never meet an identity's.
    expect(callKey("", "sub:ann", p, ACME, 1)).toBe(
      "{claim:org_id:acme}:read:60" + (algorithm === "sliding_log" ? ":log" : ""),
    );
    expect(callKey("", "sub:ann", p, ACME, 0)).toBe(
      "{claim:org_id:acme}sub:ann:read:60" + (algorithm === "sliding_log" ? ":log" : ""),
    );
    expect(callKey("", "sub:eve", p, NONE, 0)).toBe(
      "{sub:eve}:read:60" + (algorithm === "sliding_log" ? ":log" : ""),
    );
  });

  it("a call spends `cost` units; a refusal reports the units left and counts nothing", () => {
    const store = new MemoryStore({ clock: new ManualClock(1_000_000) });
    const p: LimitPolicy = { ...policy(algorithm, 3), windows: [{ limit: 7, windowS: 60 }], budgets: [] };
    const rs = Array.from({ length: 3 }, () => store.decide("sub:ann", p, true));
    expect(rs.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 4],
      [true, 1],
      [false, 1],
    ]);
    // A peek reports the unit left now.
    expect(store.decide("sub:ann", p, false)).toMatchObject({ allowed: false, remaining: 1 });
  });
});

describe("failing open (SPEC §4) applies budgets and cost", () => {
  it("divides every level's limit by expected_replicas and counts cost units in each", async () => {
    const down = (): Promise<never> => Promise.reject(new LimitStoreError("down", { reason: "refused" }));
    const primary: Limiter = { consume: down, peek: down, charge: down, close: () => Promise.resolve() };
    const fallback = new MemoryStore({ clock: new ManualClock(1_000_000), limitDivisor: 2 });
    const failover = new FailoverLimiter({
      primary,
      fallback,
      failureMode: "open",
      metrics: testMetrics().metrics,
      logger: captureLogger().logger,
      probeIntervalMs: 60_000,
    });
    try {
      // Own 20 → 10, organisation 12 → 6 while failing open; cost 2: 3 calls fit the organisation.
      const p: LimitPolicy = {
        ...policy("sliding_window", 2),
        windows: [{ limit: 20, windowS: 60 }],
        budgets: [{ key: "claim:org_id", claim: "org_id", windows: [{ limit: 12, windowS: 60 }] }],
      };
      const ds = [];
      for (const user of ["ann", "ben", "cat", "dan"])
        ds.push(await failover.consume(`sub:${user}`, p, null, ACME));
      expect(ds.map((d) => [d.allowed, d.degraded, d.limit, d.remaining])).toEqual([
        [true, true, 6, 4],
        [true, true, 6, 2],
        [true, true, 6, 0],
        [false, true, 6, 0],
      ]);
      // A charge while failing open is counted in memory too, never refused.
      const charged = await failover.charge("sub:eve", p, 5, NONE);
      expect(charged).toMatchObject({ allowed: true, degraded: true, limit: 10, remaining: 5 });
    } finally {
      await failover.close();
    }
  });
});

describe("configuration (SPEC §22 validation names the key path)", () => {
  const problems = (classes: Record<string, unknown>, plans: Record<string, unknown> = {}) => {
    const r = gatewayConfigSchema.safeParse({
      upstreams: { u: { url: "http://127.0.0.1:1" } },
      routes: [{ prefix: "/", upstream: "u" }],
      auth: { static: { tokens_file: "unused.yaml" } },
      rate_limits: { classes, plans },
    });
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  };
  const w = (limit: number) => [{ limit, window_s: 60 }];

  it("a budget key not of the form claim:<name>, and two budgets with one key", () => {
    expect(
      problems({
        read: {
          windows: w(10),
          budgets: [
            { key: "org_id", windows: w(10) },
            { key: "claim:team", windows: w(10) },
            { key: "claim:team", windows: w(10) },
          ],
        },
      }),
    ).toEqual([
      "rate_limits.classes.read.budgets.0.key: expected `claim:<name>`: the token claim whose value the budget is shared by",
      'rate_limits.classes.read.budgets.2.key: "claim:team" is already the key of budget [1]',
    ]);
  });

  it("a cost or charge.max that is not a positive integer", () => {
    expect(problems({ read: { windows: w(10), cost: 0, charge: { header: "X-Units", max: 1.5 } } })).toEqual([
      "rate_limits.classes.read.cost: expected a positive integer",
      "rate_limits.classes.read.charge.max: expected a positive integer",
    ]);
  });

  it("a cost above a window's limit: the class's, a budget's, a plan's", () => {
    expect(
      problems(
        { search: { windows: w(4), cost: 5, budgets: [{ key: "claim:org", windows: w(3) }] } },
        {
          pro: { search: w(2) },
          team: { search: { windows: w(50), budgets: [{ key: "claim:org", windows: w(1) }] } },
        },
      ),
    ).toEqual([
      "rate_limits.classes.search.windows.0.limit: 4 is below the class's cost 5: no call could ever be admitted",
      "rate_limits.classes.search.budgets.0.windows.0.limit: 3 is below the class's cost 5: no call could ever be admitted",
      "rate_limits.plans.pro.search.0.limit: 2 is below the class's cost 5: no call could ever be admitted",
      "rate_limits.plans.team.search.budgets.0.windows.0.limit: 1 is below the class's cost 5: no call could ever be admitted",
    ]);
  });

  it("a plan's entry may be its windows or { windows, budgets }, whose budgets replace the class's", () => {
    expect(
      problems(
        { read: { windows: w(10), budgets: [{ key: "claim:org", windows: w(100) }] } },
        {
          pro: { read: { windows: w(20), budgets: [{ key: "claim:org", windows: w(500) }] } },
          free: { read: w(5) },
        },
      ),
    ).toEqual([]);
    expect(problems({ read: { windows: w(10) } }, { pro: { read: { windows: w(0) } } })).toEqual([
      "rate_limits.plans.pro.read.windows.0.limit: expected a positive integer",
    ]);
  });

  it("`gateway check` lists a class's budgets and the units a call spends", () => {
    const config = gatewayConfigSchema.parse({
      upstreams: { u: { url: "http://127.0.0.1:1" } },
      routes: [{ prefix: "/", upstream: "u" }],
      auth: { static: { tokens_file: "unused.yaml" } },
      rate_limits: {
        classes: {
          search: {
            windows: w(300),
            cost: 5,
            charge: { header: "X-Usage-Units", max: 1000 },
            budgets: [{ key: "claim:org_id", windows: [...w(600), { limit: 100000, period: "month" }] }],
          },
        },
      },
    });
    const text = describeConfig(config);
    expect(text).toContain("    + claim:org_id 600/60s + 100000/month\n");
    expect(text).toContain("    units per call: 5 + X-Usage-Units (max 1000)\n");
  });
});
