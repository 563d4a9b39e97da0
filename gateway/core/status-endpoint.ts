/**
 * `GET /rate_limit` (SPEC §8, §10, §22), shaped like GitHub's: the caller's status in every class
 * under its plan's windows, counted in none, and the plan's name; per class, the shared budgets the
 * caller belongs to.
 * `{"resources":{"<class>":{"limit":N,"remaining":N,"reset":EPOCH_S,"used":N,"budgets":[{"key":
 * "claim:org_id","value":"acme","limit":N,"remaining":N,"reset":EPOCH_S,"used":N}]}},"plan":"pro"}`
 * (`budgets` only for classes that have budgets).
 */
import type { Decision, LimitPolicy } from "../ratelimit/limiter.js";

/** One class's status. `reset` is epoch seconds. */
export interface ResourceStatus {
  limit: number;
  remaining: number;
  reset: number;
  used: number;
  /** The class's budgets the caller belongs to, with their window closest to exhaustion. */
  budgets?: BudgetStatus[];
}

/** One budget's status (SPEC §22); `value` is the token's claim value as text. */
export interface BudgetStatus {
  key: string;
  value: string;
  limit: number;
  remaining: number;
  reset: number;
  used: number;
}

/**
 * Builds the JSON body from peeked decisions (same order as `policies`).
 * @param plan - the caller's plan, or null (`"plan":null`)
 */
export function statusBody(
  policies: readonly LimitPolicy[],
  decisions: readonly Decision[],
  plan: string | null,
): string {
  const resources: Record<string, ResourceStatus> = {};
  policies.forEach((p, i) => {
    const d = decisions[i]!;
    const status: ResourceStatus = {
      limit: d.limit,
      remaining: d.remaining,
      reset: Math.ceil(d.resetAtMs / 1000),
      used: d.limit - d.remaining,
    };
    if (p.budgets !== undefined && p.budgets.length > 0) {
      status.budgets = (d.levels ?? []).map((l) => {
        const key = p.budgets![l.index]!.key;
        return {
          key,
          value: l.budget.slice(key.length + 1),
          limit: l.limit,
          remaining: l.remaining,
          reset: Math.ceil(l.resetAtMs / 1000),
          used: Math.max(0, l.limit - l.remaining),
        };
      });
    }
    resources[p.className] = status;
  });
  return JSON.stringify({ resources, plan });
}
