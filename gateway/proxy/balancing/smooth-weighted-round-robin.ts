/**
 * Smooth weighted round robin, nginx's algorithm: `ngx_http_upstream_get_peer` in
 * src/http/ngx_http_upstream_round_robin.c (nginx/nginx). Every pick adds each available
 * endpoint's weight to its current weight, chooses the largest current weight (the first on a tie)
 * and takes the sum of the available weights off the chosen one. Over `sum(weights)` picks each
 * endpoint is chosen exactly `weight` times, spread out: weights 5, 1, 1 give a a b a c a a.
 *
 * Two differences from nginx, both on purpose:
 * - nginx lowers a failing peer's `effective_weight` and lets it climb back; here failures are the
 *   outlier detector's business and the weight is always the configured one.
 * - nginx leaves a skipped peer's `current_weight` as it was. When the set of available endpoints
 *   changes, the current weights then no longer sum to zero over that set and a run of
 *   `sum(weights)` picks can miss the exact counts (a simulation of random weights and availability
 *   found it in about one case in ten). SPEC §16 promises exact counts over any run among the same
 *   available endpoints, so here every current weight returns to 0 when that set changes: from there
 *   on the sequence is nginx's from a fresh start, periodic with period `sum(weights)`.
 */
import type { Balancer, BalancedEndpoint } from "./types.js";

/** SPEC §16 `round_robin`; also the spreader of `consistent_hash` calls that carry no key. */
export class SmoothWeightedRoundRobin implements Balancer {
  /** nginx's `current_weight` per endpoint. */
  private readonly current: Float64Array;
  /** Availability (1 or 0) as of the last pick that chose an endpoint; a change resets `current`. */
  private readonly inSet: Uint8Array;

  /** @param endpoints - the upstream's endpoints (read on every pick, never changed here) */
  constructor(private readonly endpoints: readonly BalancedEndpoint[]) {
    this.current = new Float64Array(endpoints.length);
    this.inSet = new Uint8Array(endpoints.length);
  }

  /** @inheritDoc Balancer.pick */
  pick(_key: string | undefined, panic: boolean): number {
    const endpoints = this.endpoints;
    const n = endpoints.length;
    const inSet = this.inSet;
    let available = 0;
    let changed = false;
    for (let i = 0; i < n; i++) {
      const a = panic || endpoints[i]!.available ? 1 : 0;
      available += a;
      if (a !== inSet[i]) changed = true;
    }
    // Leave the state alone when nothing can be chosen: the caller's panic retry must find the set
    // it saw last time, or every panic pick would restart the cycle at the same endpoint.
    if (available === 0) return -1;
    if (changed) {
      for (let i = 0; i < n; i++) inSet[i] = panic || endpoints[i]!.available ? 1 : 0;
      this.current.fill(0);
    }
    const current = this.current;
    let best = -1;
    let total = 0;
    for (let i = 0; i < n; i++) {
      if (inSet[i] === 0) continue;
      const w = endpoints[i]!.weight;
      const c = current[i]! + w;
      current[i] = c;
      total += w;
      if (best < 0 || c > current[best]!) best = i;
    }
    current[best] = current[best]! - total;
    return best;
  }
}
