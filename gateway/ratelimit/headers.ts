/**
 * The rate-limit response headers (SPEC §3), computed once per decision and written in one step on
 * whichever response goes out (Kong's habit): `X-RateLimit-Limit/-Remaining/-Reset/-Resource`, and
 * with `headers.ietf` the `RateLimit-Policy` / `RateLimit` fields of
 * draft-ietf-httpapi-ratelimit-headers-10.
 */
import type { BudgetKeys, Decision } from "./limiter.js";
import { ietfPolicyValue, type ResolvedPolicy } from "./policy.js";

/** Header values for one response; plain strings ready for `setHeader`. */
export interface RateLimitHeaders {
  limit: string;
  remaining: string;
  reset: string;
  resource: string;
  /** Whole seconds until `reset`, at least 1: the 429's `Retry-After` and N in its message. */
  retryAfterS: number;
  /** IETF fields, or undefined when disabled. */
  ietfPolicy?: string;
  ietf?: string;
}

/**
 * Builds the header values from a decision.
 * `X-RateLimit-Reset` is `ceil(resetAtMs / 1000)`; `Retry-After` is `Reset - now` rounded up, at
 * least 1 (SPEC §2), both on the limiter's clock. The IETF `RateLimit` item is the window the
 * decision reports (`windowIndex`), never guessed from its limit: a budget's when a budget binds
 * (SPEC §22, `"read-org_id"`). Limit and Remaining count units (SPEC §22 `cost`).
 * @param budgets - the call's budgets: `RateLimit-Policy` lists the levels it counts in
 */
export function rateLimitHeaders(
  decision: Decision,
  policy: ResolvedPolicy,
  budgets: BudgetKeys | null = null,
): RateLimitHeaders {
  const resetS = Math.ceil(decision.resetAtMs / 1000);
  const retryAfterS = Math.max(1, Math.ceil(resetS - decision.nowMs / 1000));
  const h: RateLimitHeaders = {
    limit: String(decision.limit),
    remaining: String(decision.remaining),
    reset: String(resetS),
    resource: policy.className,
    retryAfterS,
  };
  if (policy.ietfPolicy !== null) {
    h.ietfPolicy = ietfPolicyValue(policy, decision.nowMs, budgets)!;
    // t: seconds until the quota unit frees; equals Retry-After on a 429.
    h.ietf = `"${policy.ietfItems[decision.windowIndex]!}";r=${decision.remaining};t=${retryAfterS}`;
  }
  return h;
}
