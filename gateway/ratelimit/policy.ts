/**
 * Resolved policies (SPEC §4, §10), compiled once per configuration the way envoyproxy/ratelimit
 * builds its limit tree at load: one policy per (class, plan) with everything a request needs to
 * be counted — class name, plan, windows, algorithm, mode, the identity kind it counts by, and its
 * header values — and the prepared plan resolution, so the hot path only looks things up.
 *
 * A plan's policies differ from the class's own only in `plan` and, where the plan names the
 * class, `windows`: storage keys come from the class name and window lengths (`keys.ts`), so a
 * caller whose plan changes keeps what it has spent.
 */
import type { GatewayConfig } from "../config/schema.js";
import type { IdentityKind } from "./identity.js";
import type { Algorithm, LimitPolicy, WindowSpec } from "./limiter.js";
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
  /** `RateLimit-Policy` value (draft-ietf-httpapi-ratelimit-headers-10), or null without `headers.ietf`. */
  ietfPolicy: string | null;
  /** `RateLimit` item name per window, in `windows` order (the decision's `windowIndex` picks one). */
  ietfItems: readonly string[];
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

type Windows = readonly { limit: number; window_s: number }[];

function windowsOf(ws: Windows): WindowSpec[] {
  return ws.map((w) => Object.freeze({ limit: w.limit, windowS: w.window_s }));
}

/**
 * One policy. Item names of `RateLimit-Policy`: the class, suffixed with the window length when the
 * class has several (`"write-1s";q=10;w=1, "write-3600s";q=1000;w=3600`); a plan's policy describes
 * the plan's windows under the same names.
 * @param windows - the class's windows, or the plan's where it names the class
 * @param plan - the plan these windows belong to, or null (no plan, the anonymous class)
 */
export function resolvePolicy(
  className: string,
  algorithm: Algorithm,
  mode: "enforce" | "shadow",
  windows: readonly WindowSpec[],
  identity: IdentityKind,
  ietf: boolean,
  plan: string | null = null,
): ResolvedPolicy {
  const ietfItems = windows.map((w) => (windows.length > 1 ? `${className}-${w.windowS}s` : className));
  const ietfPolicy = ietf
    ? windows.map((w, i) => `"${ietfItems[i]!}";q=${w.limit};w=${w.windowS}`).join(", ")
    : null;
  return Object.freeze({
    className,
    algorithm,
    mode,
    windows: Object.freeze(windows),
    identity,
    plan,
    ietfPolicy,
    ietfItems: Object.freeze(ietfItems),
  });
}

/**
 * Compiles `rate_limits`: the classes, each plan's policies for every class, the anonymous class
 * and the plan resolution.
 */
export function compilePolicies(config: GatewayConfig): PolicySet {
  const ietf = config.headers.ietf;
  const rl = config.rate_limits;
  const planPolicies = (name: string | null, overrides: Readonly<Record<string, Windows>>) => {
    const byClass = new Map<string, ResolvedPolicy>();
    for (const [cls, c] of Object.entries(rl.classes)) {
      const windows = windowsOf(overrides[cls] ?? c.windows);
      byClass.set(
        cls,
        resolvePolicy(cls, c.algorithm, c.mode, windows, c.identity ?? rl.identity, ietf, name),
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
    windowsOf(rl.anonymous.windows),
    "subject",
    ietf,
  );
  // sliding_log: exact at window boundaries, and small (a rejected token is not counted, so at
  // most `limit` entries per address and window).
  const guardWindows = windowsOf(config.auth.guard.windows ?? rl.anonymous.windows);
  const guard = resolvePolicy(ANONYMOUS, "sliding_log", "enforce", guardWindows, "subject", ietf);
  return {
    byClass: none.byClass,
    anonymous,
    guard,
    plans,
    resolver: new PlanResolver(plans, rl.consumers, rl.plan_claim, fallback),
  };
}
