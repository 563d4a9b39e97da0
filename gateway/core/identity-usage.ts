/**
 * Reading and resetting one identity's usage (SPEC §21) on the very counters the limiter enforces:
 * every window is peeked (read, never counted) through the store the limiter uses, with its clock
 * (Redis `TIME` with Redis), under the limits that apply to that identity: its override, else the
 * plan asked for, else its `consumers` entry's plan, else `default_plan`, else the class's own.
 *
 * Identities are the storage identities of SPEC §10 (`sub:alice`, `client:ci-bot`, `user:bob`)
 * and budget identities of SPEC §22 (`claim:org_id:acme`, whose windows are the budgets keyed by
 * that claim).
 */
import type { TokenInfo } from "../base/token-info.js";
import { isMemberKey } from "../ratelimit/admin-store.js";
import type { Decision, LimitPolicy, WindowSpec } from "../ratelimit/limiter.js";
import type { Override } from "../ratelimit/overrides.js";
import type { PlanPolicies, ResolvedPolicy } from "../ratelimit/policy.js";
import { windowSuffixes } from "../ratelimit/storage-keys.js";
import type { Runtime } from "./runtime.js";

/** One window's usage. `reset` is epoch seconds (SPEC §3's rule, as `GET /rate_limit`). */
export interface WindowUsage {
  limit: number;
  window_s?: number;
  period?: string;
  used: number;
  remaining: number;
  reset: number;
}

/** The body of `GET /usage/<identity>`. */
export interface UsageReport {
  identity: string;
  /** The plan whose limits apply (before the override), or null. */
  plan: string | null;
  /** The override in force, or null. */
  override: Override | null;
  classes: Record<string, WindowUsage[]>;
}

/** An identity kind usage operations accept (`sub:`, `client:`, `user:`, `token:`, `claim:`). */
const IDENTITY = /^(sub|client|user|token):.+$|^claim:[^\s:{}]+:.+$/;

/** True when `identity` is a storage identity these operations accept. */
export function isUsageIdentity(identity: string): boolean {
  return IDENTITY.test(identity);
}

/** A budget identity `claim:<name>:<value>`'s claim name, or null for a caller's identity. */
function budgetClaim(identity: string): string | null {
  if (!identity.startsWith("claim:")) return null;
  return identity.slice("claim:".length, identity.indexOf(":", "claim:".length));
}

/**
 * The plan an identity's limits come from: `planName` when given, else what its consumers entry
 * (matched on the identity's own field) or `default_plan` gives.
 * @returns the plan, or undefined when `planName` names no configured plan
 */
export function planOf(rt: Runtime, identity: string, planName: string | null): PlanPolicies | undefined {
  if (planName !== null) return rt.policies.plans.get(planName);
  const value = identity.slice(identity.indexOf(":") + 1);
  const info: TokenInfo = { active: true, scope: [] };
  if (identity.startsWith("sub:")) info.sub = value;
  else if (identity.startsWith("client:")) info.clientId = value;
  return rt.policies.resolver.resolve(info).plan;
}

/** Per class, the windows an identity is counted in and the key identity they live under. */
function levelsOf(rt: Runtime, identity: string, plan: PlanPolicies): Map<string, LimitPolicy[]> {
  const claim = budgetClaim(identity);
  const out = new Map<string, LimitPolicy[]>();
  for (const p of plan.byClass.values()) {
    let windows: readonly WindowSpec[];
    if (claim === null) {
      windows = rt.limiter.usage.overrides.apply(p, identity, rt.clock, rt.policies.offsetMs).windows;
    } else {
      const budget = p.budgets.find((b) => b.claim === claim);
      if (budget === undefined) continue;
      windows = budget.windows;
    }
    out.set(
      p.className,
      windows.map((w) => single(p, w)),
    );
  }
  return out;
}

/** One window as a policy of its own: the same key (class, length or period, algorithm). */
function single(p: ResolvedPolicy, w: WindowSpec): LimitPolicy {
  return { className: p.className, algorithm: p.algorithm, mode: "enforce", windows: [w] };
}

/**
 * Reads every window of every class for `identity`, counting nothing.
 * @throws Error (as a rejection) when the limit store does not answer (a fail-open fallback's
 *   answer is not the shared count, so it is refused too)
 */
export async function readUsage(rt: Runtime, identity: string, plan: PlanPolicies): Promise<UsageReport> {
  const levels = levelsOf(rt, identity, plan);
  const store = rt.limiter.store;
  const classes: Record<string, WindowUsage[]> = {};
  await Promise.all(
    [...levels].map(async ([name, singles]) => {
      const ds = await Promise.all(singles.map((s) => store.peek(identity, s)));
      classes[name] = ds.map((d, i) => windowUsage(singles[i]!.windows[0]!, d));
    }),
  );
  const ordered: Record<string, WindowUsage[]> = {};
  for (const name of levels.keys()) ordered[name] = classes[name]!;
  const override =
    budgetClaim(identity) === null ? rt.limiter.usage.overrides.get(identity, rt.clock.nowMs()) : undefined;
  return { identity, plan: plan.name, override: override ?? null, classes: ordered };
}

function windowUsage(w: WindowSpec, d: Decision): WindowUsage {
  if (d.degraded) throw new Error("limit store unavailable (failing open)");
  const shape = w.period === undefined ? { window_s: w.windowS } : { period: w.period };
  return {
    limit: w.limit,
    ...shape,
    used: Math.max(0, d.limit - d.remaining),
    remaining: d.remaining,
    reset: Math.ceil(d.resetAtMs / 1000),
  };
}

/**
 * The keys (without the store prefix) of every counter `identity` may have in `classes`: under the
 * classes' own windows, every plan's, and its override's, so a reset leaves nothing of the
 * identity's counts whatever limits spent them. A budget identity's keys are its budgets' (SPEC
 * §22). A caller's own windows in a class with budgets, counted while its token carried a budget's
 * claim, live under that budget's hash tag (`{claim:org_id:acme}sub:alice:read:60`): those are
 * found by a search of the store (`UsageControl.memberKeys`), kept when exactly the
 * identity's and one of its windows'.
 * @throws Error (as a rejection) when the store cannot answer
 */
export async function resetKeys(
  rt: Runtime,
  identity: string,
  classes: readonly string[],
): Promise<string[]> {
  const plans = [{ byClass: rt.policies.byClass }, ...rt.policies.plans.values()];
  const claim = budgetClaim(identity);
  const keys = new Set<string>();
  const memberSuffixes = new Set<string>();
  for (const name of classes) {
    for (const plan of plans) {
      const p = plan.byClass.get(name);
      if (p === undefined) continue;
      const policies: LimitPolicy[] =
        claim === null
          ? [p, rt.limiter.usage.overrides.apply(p, identity, rt.clock, rt.policies.offsetMs)]
          : p.budgets
              .filter((b) => b.claim === claim)
              .map((b) => ({ ...p, windows: b.windows, budgets: [] }));
      for (const q of policies) {
        for (const s of windowSuffixes(q)) {
          keys.add(`{${identity}}${s}`);
          if (claim === null && p.budgets.length > 0) memberSuffixes.add(s);
        }
      }
    }
  }
  if (memberSuffixes.size > 0) {
    for (const k of await rt.limiter.usage.memberKeys(identity))
      if (isMemberKey(k, identity, memberSuffixes)) keys.add(k);
  }
  return [...keys];
}
