/**
 * `GET /rate_limit` (SPEC §8), shaped like GitHub's: the caller's status in every class, counted in
 * none. `{"resources":{"<class>":{"limit":N,"remaining":N,"reset":EPOCH_S,"used":N}}}`.
 */
import type { Decision, LimitPolicy } from "./ratelimit/limiter.js";

/** One class's status. `reset` is epoch seconds. */
export interface ResourceStatus {
  limit: number;
  remaining: number;
  reset: number;
  used: number;
}

/** Builds the JSON body from peeked decisions (same order as `policies`). */
export function statusBody(policies: readonly LimitPolicy[], decisions: readonly Decision[]): string {
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
  return JSON.stringify({ resources });
}
