/**
 * The brute-force guard (SPEC §3): a token no cache can answer for costs a network call (RFC 7662
 * introspection, a key-set fetch), so it is resolved only while the client IP's guard budget has
 * room. That budget counts, per IP, only the tokens that failed to resolve (unknown, inactive or
 * expired at introspection, refused by JWT validation), against `auth.guard.windows` (by default
 * the anonymous class's windows) under its own key: calls without a token, malformed headers and
 * unmatched paths count in the anonymous class but never spend it, so a new valid token from an
 * address many clients share (a NAT, an office proxy) is not refused because others there called
 * without one. A flood of invented tokens still never reaches the introspection server.
 *
 * The limiter's peek cannot see lookups still in flight (each may become a counted failure), so
 * those are subtracted: a concurrent flood of fresh tokens from one IP makes at most `remaining`
 * network calls. A token known to be valid whose cache entry merely went stale is re-validated
 * without the guard, so a valid token keeps working.
 */
import type { RequestTrace } from "../observability/tracing/request-trace.js";
import type { Decision, Limiter } from "../ratelimit/limiter.js";
import { guardKey, ipKey } from "../ratelimit/identity.js";
import type { ResolvedPolicy } from "../ratelimit/policy.js";
import type { Authenticator } from "../auth/authenticator.js";
import type { TokenInfo } from "../base/token-info.js";

/** What the guard made of a miss. `decision` is null where the limit store failed. */
export type GuardedLookup =
  /** The IP's guard budget is spent: nothing was resolved (the anonymous 429, the guard's window). */
  | { status: "limited"; decision: Decision }
  | { status: "active"; info: TokenInfo }
  /** The source could not answer (503); `decision` is the guard's peek, for the headers. */
  | { status: "unavailable"; decision: Decision | null }
  /**
   * Unknown or inactive (401); counted in the guard, and `decision` counted the call in the
   * anonymous class (its headers, and a 429 once that class is spent).
   */
  | { status: "inactive"; decision: Decision | null };

/** The policies the guard counts in, from the request's runtime (`PolicySet`). */
export interface GuardPolicies {
  readonly anonymous: ResolvedPolicy;
  readonly guard: ResolvedPolicy;
}

/** One per gateway: its in-flight counts outlive configuration reloads. */
export class NetworkGuard {
  /** Network lookups in flight per client IP. */
  private readonly pending = new Map<string, number>();

  /**
   * Resolves a cache miss unless the IP's guard budget forbids it.
   * @param clientIp - the request's client IP (SPEC §3 `trust_proxy`)
   * @param limiter - the limiter of the request's runtime
   * @param policies - the anonymous and guard policies of the request's runtime
   * @param trace - the request's spans, for the authenticator to trace its network calls
   * @returns never rejects
   */
  async resolve(
    authenticator: Authenticator,
    token: string,
    hash: string,
    clientIp: string,
    limiter: Limiter,
    policies: GuardPolicies,
    trace: RequestTrace | null = null,
  ): Promise<GuardedLookup> {
    const key = guardKey(clientIp);
    const guard = authenticator.knownActive(hash)
      ? null
      : await settle(limiter.peek(key, policies.guard, trace));
    const pending = this.pending.get(key) ?? 0;
    if (guard !== null && (!guard.allowed || guard.remaining <= pending)) {
      return { status: "limited", decision: { ...guard, allowed: false, remaining: 0 } };
    }
    this.pending.set(key, pending + 1);
    try {
      const looked = await authenticator.resolve(token, hash, trace);
      if (looked.status === "active") return { status: "active", info: looked.info };
      if (looked.status === "unavailable") return { status: "unavailable", decision: guard };
      // Still pending until counted, so a concurrent peek never sees the budget without this call.
      // Both counts leave in one write (the store batches a turn's calls): one round trip.
      const [, anonymous] = await Promise.all([
        settle(limiter.consume(key, policies.guard, trace)),
        settle(limiter.consume(ipKey(clientIp), policies.anonymous, trace)),
      ]);
      return { status: "inactive", decision: anonymous };
    } finally {
      const left = this.pending.get(key)! - 1;
      if (left === 0) this.pending.delete(key);
      else this.pending.set(key, left);
    }
  }
}

/** The limiter's answer, or null when the store failed (the failover wrapper counted and logged it). */
async function settle(p: Promise<Decision>): Promise<Decision | null> {
  try {
    return await p;
  } catch {
    return null;
  }
}
