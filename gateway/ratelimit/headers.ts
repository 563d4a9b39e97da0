/**
 * The rate-limit response headers (SPEC §3), computed once per decision and written in one step on
 * whichever response goes out (Kong's habit): `X-RateLimit-Limit/-Remaining/-Reset/-Resource`, and
 * with `headers.ietf` the `RateLimit-Policy` / `RateLimit` fields of
 * draft-ietf-httpapi-ratelimit-headers-10.
 */
import type { Decision, LimitPolicy } from "./limiter.js";

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
 * least 1 (SPEC §2), both on the limiter's clock.
 * @param ietfPolicy - precomputed `RateLimit-Policy` value for the class, or undefined
 */
export function rateLimitHeaders(
  decision: Decision,
  policy: LimitPolicy,
  ietfPolicy: string | undefined,
): RateLimitHeaders {
  const resetS = Math.ceil(decision.resetAtMs / 1000);
  const retryAfterS = Math.max(1, Math.ceil(resetS - decision.nowMs / 1000));
  const h: RateLimitHeaders = {
    limit: String(decision.limit),
    remaining: String(decision.remaining),
    reset: String(resetS),
    resource: policy.name,
    retryAfterS,
  };
  if (ietfPolicy !== undefined) {
    h.ietfPolicy = ietfPolicy;
    // t: seconds until the quota unit frees; equals Retry-After on a 429.
    h.ietf = `"${ietfItemName(policy, decision.limit)}";r=${decision.remaining};t=${retryAfterS}`;
  }
  return h;
}

/**
 * `RateLimit-Policy` for a class: one policy item per window, e.g. `"read";q=5000;w=3600`.
 */
export function ietfPolicyOf(policy: LimitPolicy): string {
  return policy.windows.map((w) => `"${itemName(policy, w.windowS)}";q=${w.limit};w=${w.windowS}`).join(", ");
}

/** Policy item name: the class, suffixed with the window length when the class has several. */
function itemName(policy: LimitPolicy, windowS: number): string {
  return policy.windows.length > 1 ? `${policy.name}-${windowS}s` : policy.name;
}

/** The item of the reported window, found by its limit (the first window with that limit). */
function ietfItemName(policy: LimitPolicy, limit: number): string {
  if (policy.windows.length === 1) return policy.name;
  const w = policy.windows.find((x) => x.limit === limit) ?? policy.windows[0]!;
  return itemName(policy, w.windowS);
}
