/**
 * The anonymous-budget guard (SPEC §3): a token no cache can answer for costs a network call (RFC
 * 7662 introspection, a key-set fetch), so it is resolved only while the client IP's anonymous
 * budget has room. Brute-forcing tokens is then limited by that budget, and a flood of invented
 * tokens never reaches the introspection server. It applies to every authenticator's miss.
 *
 * The limiter's peek cannot see lookups still in flight (each may become a counted 401), so those
 * are subtracted: a concurrent flood of fresh tokens from one IP makes at most `remaining` network
 * calls. A token known to be valid whose cache entry merely went stale is re-validated without the
 * guard, so a valid token behind a shared NAT keeps working.
 */
import type { RequestTrace } from "../observability/tracing/request-trace.js";
import type { Decision, Limiter } from "../ratelimit/limiter.js";
import type { ResolvedPolicy } from "../ratelimit/policy.js";
import type { Authenticator } from "./authenticator.js";
import type { TokenInfo } from "./types.js";

/** What the guard made of a miss. `decision` is null where the limit store failed. */
export type GuardedLookup =
  /** The IP's anonymous budget is spent: nothing was resolved (answer 429). */
  | { status: "limited"; decision: Decision }
  | { status: "active"; info: TokenInfo }
  /** The source could not answer (503); `decision` is the anonymous peek, for the headers. */
  | { status: "unavailable"; decision: Decision | null }
  /** Unknown or inactive (401); `decision` counted the call in the anonymous class. */
  | { status: "inactive"; decision: Decision | null };

/** One per gateway: its in-flight counts outlive configuration reloads. */
export class NetworkGuard {
  /** Network lookups in flight per anonymous key. */
  private readonly pending = new Map<string, number>();

  /**
   * Resolves a cache miss unless the IP's anonymous budget forbids it.
   * @param anonKey - the IP's anonymous identity key (`ip:<address>`)
   * @param limiter - the limiter of the request's runtime
   * @param anonymous - the anonymous policy of the request's runtime
   * @param trace - the request's spans, for the authenticator to trace its network calls
   * @returns never rejects
   */
  async resolve(
    authenticator: Authenticator,
    token: string,
    hash: string,
    anonKey: string,
    limiter: Limiter,
    anonymous: ResolvedPolicy,
    trace: RequestTrace | null = null,
  ): Promise<GuardedLookup> {
    const guard = authenticator.knownActive(hash)
      ? null
      : await settle(limiter.peek(anonKey, anonymous, trace));
    const pending = this.pending.get(anonKey) ?? 0;
    if (guard !== null && (!guard.allowed || guard.remaining <= pending)) {
      return { status: "limited", decision: { ...guard, allowed: false, remaining: 0 } };
    }
    this.pending.set(anonKey, pending + 1);
    try {
      const looked = await authenticator.resolve(token, hash, trace);
      if (looked.status === "active") return { status: "active", info: looked.info };
      if (looked.status === "unavailable") return { status: "unavailable", decision: guard };
      // Still pending until counted, so a concurrent peek never sees the budget without this call.
      return { status: "inactive", decision: await settle(limiter.consume(anonKey, anonymous, trace)) };
    } finally {
      const left = this.pending.get(anonKey)! - 1;
      if (left === 0) this.pending.delete(anonKey);
      else this.pending.set(anonKey, left);
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
