/**
 * Resolved policies (SPEC §4, §10, §19, §22), compiled once per configuration the way envoyproxy/ratelimit
 * builds its limit tree at load: one policy per (class, plan) with everything a request needs to
 * be counted — class name, plan, windows, algorithm, mode, the identity kind it counts by, and its
 * header values — and the prepared plan resolution, so the hot path only looks things up.
 *
 * A plan's policies differ from the class's own only in `plan` and, where the plan names the
 * class, `windows` (and `budgets` when its entry gives them): storage keys come from the class name and window lengths (`storage-keys.ts`), so a
 * caller whose plan changes keeps what it has spent.
 */
import type { GatewayConfig } from "../config/schema.js";
import { parseUtcOffset } from "../config/calendar-periods.js";
import { offsetMsOf, periodBounds, periodLengthS, type PeriodBounds } from "./calendar.js";
import type { IdentityKind } from "./identity.js";
import type { Algorithm, BudgetKeys, BudgetLevel, LimitPolicy, WindowSpec } from "./limiter.js";
import { callIndexes, flatWindows } from "./storage-keys.js";
import { PlanResolver } from "./plans.js";

/** The name of the unauthenticated class (SPEC §3). */
export const ANONYMOUS = "anonymous";

/** A limit class ready for the hot path. Frozen. */
export interface ResolvedPolicy extends LimitPolicy {
  /** Whose budget a call spends (the anonymous class counts by client IP and ignores it). */
  identity: IdentityKind;
  /**
   * The plan whose windows these are (the `plan` label and access-log field), or null for callers
   * without a plan and for the anonymous class.
   */
  plan: string | null;
  /**
   * `RateLimit-Policy` value (draft-ietf-httpapi-ratelimit-headers-10), or null without
   * `headers.ietf`; with a `month` window, the value for the month the configuration was loaded in
   * ({@link ietfPolicyAt} gives the current one).
   */
  ietfPolicy: string | null;
  /**
   * With `headers.ietf` and a `month` window, whose `w` is the length of the month at hand (SPEC
   * §19): the `RateLimit-Policy` value at an instant (epoch ms), made once per month. Else null,
   * and {@link ietfPolicy} holds at every instant.
   */
  ietfPolicyAt: ((nowMs: number) => string) | null;
  /**
   * `RateLimit` item name per flat window (own windows, then each budget's: `flatWindows`); the
   * decision's `windowIndex` picks one.
   */
  ietfItems: readonly string[];
  /**
   * The window's name per flat window, as the access line's `window` and the decisions metric's
   * `window` label give a refusing window: the calendar period (`"month"`) or the sliding length
   * (`"60s"`), so a spent quota tells itself from a burst (bounded: names from configuration).
   */
  windowNames: readonly string[];
  /** Shared budgets (SPEC §22), in configuration order; empty without. */
  budgets: readonly BudgetLevel[];
  /** Units a call spends (SPEC §22). */
  cost: number;
  /** Units charged from the upstream's answer (SPEC §22), or null. `header` is lower-case. */
  charge: Readonly<{ header: string; max: number }> | null;
}

/** What a class adds to its windows (SPEC §22): shared budgets, cost, charge. */
export interface PolicyExtras {
  budgets?: readonly BudgetLevel[];
  cost?: number;
  charge?: Readonly<{ header: string; max: number }> | null;
}

/**
 * The `RateLimit-Policy` value of `policy` at `nowMs` (epoch ms): a month window's `w` is the
 * length of the month at hand (SPEC §19). Null without `headers.ietf`. With budgets (SPEC §22) it
 * lists the windows of every level the call counts in (a budget's items are named
 * `<class>-<claim>`).
 * @param budgets - the call's budgets; a call that belongs to only some has its own list
 */
export function ietfPolicyValue(
  policy: ResolvedPolicy,
  nowMs: number,
  budgets: BudgetKeys | null = null,
): string | null {
  if (policy.ietfPolicy === null) return null;
  const indexes = budgets === null ? null : callIndexes(policy, budgets);
  if (indexes !== null && indexes.length !== policy.ietfItems.length) {
    const windows = flatWindows(policy).windows;
    return ietfPolicyText(
      indexes.map((i) => windows[i]!),
      indexes.map((i) => policy.ietfItems[i]!),
      nowMs,
    );
  }
  return policy.ietfPolicyAt === null ? policy.ietfPolicy : policy.ietfPolicyAt(nowMs);
}

/** Every class's policy for one plan (or for callers without a plan). */
export interface PlanPolicies {
  /** The plan's name, or null: the classes' own windows. */
  readonly name: string | null;
  /** By class name, in configuration order (the order of `GET /rate_limit`). */
  readonly byClass: ReadonlyMap<string, ResolvedPolicy>;
}

/** The compiled limit classes and plans of one configuration. */
export interface PolicySet {
  /** The classes' own policies (callers without a plan). */
  readonly byClass: ReadonlyMap<string, ResolvedPolicy>;
  readonly anonymous: ResolvedPolicy;
  /**
   * The brute-force guard's windows (`auth.guard.windows`, else the anonymous class's), counted per
   * client IP under its own key (`guardKey` in `identity.ts`) with the exact `sliding_log`; named
   * `anonymous` in headers (SPEC §3).
   */
  readonly guard: ResolvedPolicy;
  /** Every configured plan by name. */
  readonly plans: ReadonlyMap<string, PlanPolicies>;
  /** Picks a caller's plan: consumers, then `plan_claim`, then `default_plan`, else no plan. */
  readonly resolver: PlanResolver<PlanPolicies>;
}

type Windows = GatewayConfig["rate_limits"]["anonymous"]["windows"];
type PlanEntry = GatewayConfig["rate_limits"]["plans"][string][string];

/**
 * @param offsetMs - `rate_limits.quota_utc_offset` (ms east of UTC), for calendar windows
 */
function windowsOf(ws: Windows, offsetMs: number): WindowSpec[] {
  return ws.map((w) =>
    Object.freeze(
      w.period === undefined
        ? { limit: w.limit, windowS: w.window_s! }
        : { limit: w.limit, period: w.period, offsetMs },
    ),
  );
}

/** `RateLimit-Policy` at `nowMs`: `w` is a sliding window's length or the current period's. */
function ietfPolicyText(windows: readonly WindowSpec[], items: readonly string[], nowMs: number): string {
  return windows
    .map((w, i) => {
      const lengthS = w.period === undefined ? w.windowS : periodLengthS(nowMs, w.period, w.offsetMs);
      return `"${items[i]!}";q=${w.limit};w=${lengthS}`;
    })
    .join(", ");
}

/** {@link ietfPolicyText} remembered for the month at hand (every month window shares one offset). */
function monthlyPolicyText(
  windows: readonly WindowSpec[],
  items: readonly string[],
  offsetMs: number,
): (nowMs: number) => string {
  const month: PeriodBounds = { startMs: 0, endMs: 0 };
  let text = "";
  return (nowMs) => {
    if (nowMs < month.startMs || nowMs >= month.endMs) {
      periodBounds(nowMs, "month", offsetMs, month);
      text = ietfPolicyText(windows, items, nowMs);
    }
    return text;
  };
}

/**
 * One policy. Item names of `RateLimit-Policy`: the class, suffixed with the window length (or the
 * calendar period) when the class has several (`"write-1s";q=10;w=1, "write-3600s";q=1000;w=3600`,
 * `"read-day";q=1000;w=86400`); a plan's policy describes the plan's windows under the same names.
 * A budget's windows follow, named `<class>-<claim>` by the same rule (`"read-org_id"`, or
 * `"read-org_id-60s"`, `"read-org_id-month"` when it has several).
 * @param windows - the class's windows, or the plan's where it names the class
 * @param plan - the plan these windows belong to, or null (no plan, the anonymous class)
 * @param extras - budgets, cost and charge (SPEC §22); none, 1 and none by default
 */
export function resolvePolicy(
  className: string,
  algorithm: Algorithm,
  mode: "enforce" | "shadow",
  windows: readonly WindowSpec[],
  identity: IdentityKind,
  ietf: boolean,
  plan: string | null = null,
  extras: PolicyExtras = {},
): ResolvedPolicy {
  const budgets = Object.freeze(extras.budgets ?? []);
  const itemsOf = (name: string, ws: readonly WindowSpec[]) =>
    ws.map((w) => (ws.length === 1 ? name : `${name}-${w.period ?? `${w.windowS}s`}`));
  const ietfItems = [
    ...itemsOf(className, windows),
    ...budgets.flatMap((b) => itemsOf(`${className}-${b.claim}`, b.windows)),
  ];
  const flat = [...windows, ...budgets.flatMap((b) => b.windows)];
  const windowNames = flat.map((w) => w.period ?? `${w.windowS}s`);
  const month = flat.find((w) => w.period === "month");
  const ietfPolicy = ietf ? ietfPolicyText(flat, ietfItems, Date.now()) : null;
  const ietfPolicyAt =
    ietf && month !== undefined ? monthlyPolicyText(flat, ietfItems, month.offsetMs!) : null;
  return Object.freeze({
    className,
    algorithm,
    mode,
    windows: Object.freeze(windows),
    identity,
    plan,
    ietfPolicy,
    ietfPolicyAt,
    ietfItems: Object.freeze(ietfItems),
    windowNames: Object.freeze(windowNames),
    budgets,
    cost: extras.cost ?? 1,
    charge: extras.charge ?? null,
  });
}

type Budgets = GatewayConfig["rate_limits"]["classes"][string]["budgets"];

/** Configured budgets as levels (SPEC §22): `claim:org_id` → claim `org_id`. */
function budgetsOf(budgets: Budgets, offsetMs: number): BudgetLevel[] {
  return (budgets ?? []).map((b) =>
    Object.freeze({
      key: b.key,
      claim: b.key.slice("claim:".length),
      windows: windowsOf(b.windows, offsetMs),
    }),
  );
}

/**
 * Compiles `rate_limits`: the classes, each plan's policies for every class, the anonymous class
 * and the plan resolution.
 */
export function compilePolicies(config: GatewayConfig): PolicySet {
  const ietf = config.headers.ietf;
  const rl = config.rate_limits;
  const offsetMs = offsetMsOf(parseUtcOffset(rl.quota_utc_offset)!);
  const planPolicies = (name: string | null, overrides: Readonly<Record<string, PlanEntry>>) => {
    const byClass = new Map<string, ResolvedPolicy>();
    for (const [cls, c] of Object.entries(rl.classes)) {
      const entry = overrides[cls];
      const own = entry === undefined ? c.windows : Array.isArray(entry) ? entry : entry.windows;
      const budgets = entry === undefined || Array.isArray(entry) ? c.budgets : (entry.budgets ?? c.budgets);
      const windows = windowsOf(own, offsetMs);
      const extras: PolicyExtras = {
        budgets: budgetsOf(budgets, offsetMs),
        cost: c.cost,
        charge:
          c.charge === undefined
            ? null
            : Object.freeze({ header: c.charge.header.toLowerCase(), max: c.charge.max }),
      };
      byClass.set(
        cls,
        resolvePolicy(cls, c.algorithm, c.mode, windows, c.identity ?? rl.identity, ietf, name, extras),
      );
    }
    return Object.freeze({ name, byClass });
  };
  const none = planPolicies(null, {});
  const plans = new Map(Object.entries(rl.plans).map(([name, o]) => [name, planPolicies(name, o)]));
  const fallback = rl.default_plan === undefined ? none : plans.get(rl.default_plan)!;
  const anonymous = resolvePolicy(
    ANONYMOUS,
    "sliding_window",
    "enforce",
    windowsOf(rl.anonymous.windows, offsetMs),
    "subject",
    ietf,
  );
  // sliding_log: exact at window boundaries, and small (a rejected token is not counted, so at
  // most `limit` entries per address and window).
  const guardWindows = windowsOf(config.auth.guard.windows ?? rl.anonymous.windows, offsetMs);
  const guard = resolvePolicy(ANONYMOUS, "sliding_log", "enforce", guardWindows, "subject", ietf);
  return {
    byClass: none.byClass,
    anonymous,
    guard,
    plans,
    resolver: new PlanResolver(plans, rl.consumers, rl.plan_claim, fallback),
  };
}
