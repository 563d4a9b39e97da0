/**
 * `GET /rate_limit` (SPEC §8, §10), shaped like GitHub's: the caller's status in every class under
 * its plan's windows, counted in none, and the plan's name.
 * `{"resources":{"<class>":{"limit":N,"remaining":N,"reset":EPOCH_S,"used":N}},"plan":"pro"}`.
 */
import type { Decision, LimitPolicy } from "../ratelimit/limiter.js";

/** One class's status. `reset` is epoch seconds. */
export interface ResourceStatus {
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
    resources[p.className] = {
      limit: d.limit,
      remaining: d.remaining,
      reset: Math.ceil(d.resetAtMs / 1000),
      used: d.limit - d.remaining,
    };
  });
  return JSON.stringify({ resources, plan });
}
