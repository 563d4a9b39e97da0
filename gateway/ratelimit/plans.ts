/**
 * Which plan a caller is on (SPEC §10), decided by lookups prepared at configuration time: the
 * `consumers` entries become maps by `sub`, by `client_id` and by both, each remembering the
 * position of its first entry, so "first match wins" costs at most three map lookups whatever the
 * number of entries; then the `plan_claim` member; then `default_plan`.
 *
 * Generic over what a plan compiles to, so this module knows nothing of policies (`policy.ts`
 * builds one resolver per configuration with its compiled plans).
 */
import type { TokenInfo } from "../base/token-info.js";

/** One `rate_limits.consumers` entry as configured. */
export interface ConsumerEntry {
  sub?: string | undefined;
  client_id?: string | undefined;
  plan: string;
}

/**
 * The resolver's answer. Built once per plan (and twice for the fallback), so a request allocates
 * nothing.
 */
export interface PlanChoice<P> {
  readonly plan: P;
  /**
   * True when the token's plan claim was present but not a string naming a configured plan, so
   * the fallback was used: counted in `gateway_plan_claim_unknown_total`.
   */
  readonly claimUnknown: boolean;
}

/** A consumers entry as found: its position in the list decides between several matches. */
interface Match<P> {
  index: number;
  choice: PlanChoice<P>;
}

/** The prepared resolution of one configuration. */
export class PlanResolver<P> {
  private readonly bySub = new Map<string, Match<P>>();
  private readonly byClient = new Map<string, Match<P>>();
  /** `sub` → `client_id` → entry, for entries that give both. */
  private readonly byBoth = new Map<string, Map<string, Match<P>>>();
  private readonly byName = new Map<string, PlanChoice<P>>();
  private readonly fallback: PlanChoice<P>;
  private readonly fallbackUnknown: PlanChoice<P>;

  /**
   * @param plans - every configured plan by name, compiled
   * @param consumers - `rate_limits.consumers`, validated (each names a plan of `plans` and has
   *   `sub` or `client_id`)
   * @param claim - `rate_limits.plan_claim`, or undefined
   * @param fallback - the `default_plan`'s compiled plan, or the no-plan value
   */
  constructor(
    plans: ReadonlyMap<string, P>,
    consumers: readonly ConsumerEntry[],
    private readonly claim: string | undefined,
    fallback: P,
  ) {
    for (const [name, plan] of plans) this.byName.set(name, Object.freeze({ plan, claimUnknown: false }));
    this.fallback = Object.freeze({ plan: fallback, claimUnknown: false });
    this.fallbackUnknown = Object.freeze({ plan: fallback, claimUnknown: true });
    consumers.forEach((c, index) => {
      const match = { index, choice: this.byName.get(c.plan)! };
      // A later entry with the same fields can never match first: keep the earliest.
      if (c.sub !== undefined && c.client_id !== undefined) {
        let inner = this.byBoth.get(c.sub);
        if (inner === undefined) this.byBoth.set(c.sub, (inner = new Map()));
        if (!inner.has(c.client_id)) inner.set(c.client_id, match);
      } else if (c.sub !== undefined) {
        if (!this.bySub.has(c.sub)) this.bySub.set(c.sub, match);
      } else if (c.client_id !== undefined && !this.byClient.has(c.client_id)) {
        this.byClient.set(c.client_id, match);
      }
    });
  }

  /**
   * The caller's plan: the first `consumers` entry whose every given field equals the token's;
   * else the plan named by the claim; else the fallback. A claim member that is present but not a
   * string naming a configured plan (SPEC §10: JSON `null` included) is treated as absent and
   * flagged `claimUnknown`.
   */
  resolve(info: TokenInfo): PlanChoice<P> {
    const { sub, clientId } = info;
    let best: Match<P> | undefined;
    if (sub !== undefined) {
      best = this.bySub.get(sub);
      if (clientId !== undefined) best = earlier(best, this.byBoth.get(sub)?.get(clientId));
    }
    if (clientId !== undefined) best = earlier(best, this.byClient.get(clientId));
    if (best !== undefined) return best.choice;
    if (this.claim === undefined) return this.fallback;
    const value = info.claims?.[this.claim];
    if (value === undefined) return this.fallback;
    return (typeof value === "string" ? this.byName.get(value) : undefined) ?? this.fallbackUnknown;
  }
}

function earlier<P>(a: Match<P> | undefined, b: Match<P> | undefined): Match<P> | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return b.index < a.index ? b : a;
}
