/**
 * Which shared budgets a call belongs to (SPEC §22): a budget keyed by `claim:<name>` is shared by
 * every caller whose verified token carries the same value of that claim (an introspection
 * member, a JWT claim or a static-file field, kept in `TokenInfo.claims` like the plan claim).
 */
import type { TokenInfo } from "../base/token-info.js";
import type { GatewayConfig } from "../config/schema.js";
import type { BudgetKeys, LevelStatus, LimitPolicy } from "./limiter.js";
import { flatWindows } from "./storage-keys.js";

/**
 * The budgets of `policy` the token belongs to: per budget, its storage identity
 * `claim:<name>:<value>` (a kind no identity has, so a budget never shares a key with a caller),
 * or null when the token lacks the claim or its value is neither a non-empty string nor a finite
 * number (the call then spends its own windows and the other budgets only).
 * @returns null when the policy has no budgets (nothing is allocated)
 */
export function budgetKeysOf(info: TokenInfo, policy: LimitPolicy): BudgetKeys | null {
  const budgets = policy.budgets;
  if (budgets === undefined || budgets.length === 0) return null;
  const claims = info.claims;
  return budgets.map((b) => {
    const v = claims?.[b.claim];
    const usable = (typeof v === "string" && v !== "") || (typeof v === "number" && Number.isFinite(v));
    return usable ? `claim:${b.claim}:${String(v)}` : null;
  });
}

/**
 * The claim names of every budget of the configuration (classes and plans), each once: the token
 * members every source keeps besides the plan claim. Reads a configuration whose `rate_limits`
 * section was refused too (`gateway check` loads the tokens file anyway): none then.
 */
export function budgetClaimsOf(config: GatewayConfig): string[] {
  const rl = config.rate_limits as Partial<GatewayConfig["rate_limits"]> | undefined;
  if (rl?.classes === undefined) return [];
  const names = new Set<string>();
  const add = (budgets: readonly { key: string }[] | undefined) => {
    for (const b of budgets ?? []) names.add(b.key.slice("claim:".length));
  };
  for (const c of Object.values(rl.classes)) add(c.budgets);
  for (const plan of Object.values(rl.plans ?? {})) {
    for (const entry of Object.values(plan)) if (!Array.isArray(entry)) add(entry.budgets);
  }
  return [...names];
}

/**
 * Which level a decision's window belongs to (SPEC §22 `limited_by`): `"identity"` for the
 * caller's own windows, else the budget's key (`"claim:org_id"`).
 * @param windowIndex - a flat index (`Decision.windowIndex`)
 */
export function levelName(policy: LimitPolicy, windowIndex: number): string {
  const level = flatWindows(policy).levels[windowIndex] ?? 0;
  return level === 0 ? "identity" : policy.budgets![level - 1]!.key;
}

/**
 * Each budget level's reported window (SPEC §3's rule within the level: the fewest units left,
 * ties to the later reset), from a peek's per-window state.
 * @param indexes - the flat indexes the call counted in (`callIndexes`), in call order
 * @param limits - per call window, its limit (divided while failing open)
 * @param remaining - per call window, the units left now
 * @param resets - per call window, its reset (epoch ms)
 */
export function levelStatuses(
  policy: LimitPolicy,
  budgets: BudgetKeys,
  indexes: readonly number[],
  limits: readonly number[],
  remaining: readonly number[],
  resets: readonly number[],
): LevelStatus[] {
  const levels = flatWindows(policy).levels;
  const out: LevelStatus[] = [];
  for (let i = 0; i < indexes.length; i++) {
    const level = levels[indexes[i]!]!;
    if (level === 0) continue;
    const last = out[out.length - 1];
    if (last === undefined || last.index !== level - 1) {
      out.push({
        budget: budgets[level - 1]!,
        index: level - 1,
        limit: limits[i]!,
        remaining: remaining[i]!,
        resetAtMs: resets[i]!,
      });
    } else if (
      remaining[i]! < last.remaining ||
      (remaining[i] === last.remaining && resets[i]! > last.resetAtMs)
    ) {
      last.limit = limits[i]!;
      last.remaining = remaining[i]!;
      last.resetAtMs = resets[i]!;
    }
  }
  return out;
}
