/**
 * SPEC §16 `least_request` when the endpoints' weights differ: Envoy's weighted least request.
 * Each endpoint's effective weight is `weight / (requests in flight + 1)`
 * (`LeastRequestLoadBalancer::hostWeight` with the default `active_request_bias` of 1, in
 * source/extensions/load_balancing_policies/least_request/least_request_lb.cc), and picks follow
 * the effective weights through an earliest-deadline-first schedule (`EdfLoadBalancerBase` in
 * source/common/upstream/load_balancer_impl.cc, with `EdfScheduler` of edf_scheduler.h): every
 * endpoint has a deadline; a pick takes the earliest (the first in configuration order on a tie),
 * moves the schedule's time to it, and gives that endpoint its next deadline, `time + 1 /` its
 * effective weight read at that moment. An idle pool is spread exactly in the weights' ratio; a
 * busy endpoint's next turn comes later in proportion to its calls in flight.
 *
 * Differences from Envoy: the schedule is scanned (an upstream has a handful of endpoints) rather
 * than kept in a heap, and an endpoint that was unavailable rejoins at the schedule's time rather
 * than at a deadline it had when it left (Envoy rebuilds its scheduler when the host set changes).
 */
import type { Balancer, BalancedEndpoint } from "./types.js";

/** Weighted least request (effective weights on an EDF schedule). */
export class WeightedLeastRequest implements Balancer {
  /** Each endpoint's next deadline on the schedule (in units of 1 / weight). */
  private readonly deadlines: Float64Array;
  /** The schedule's time: the deadline of the latest pick. */
  private time = 0;

  /** @param endpoints - the upstream's endpoints (read on every pick, never changed here) */
  constructor(private readonly endpoints: readonly BalancedEndpoint[]) {
    this.deadlines = new Float64Array(endpoints.length);
    for (let i = 0; i < endpoints.length; i++) this.deadlines[i] = 1 / endpoints[i]!.weight;
  }

  /** @inheritDoc Balancer.pick */
  pick(_key: string | undefined, panic: boolean): number {
    const endpoints = this.endpoints;
    const deadlines = this.deadlines;
    let best = -1;
    let earliest = Infinity;
    for (let i = 0; i < endpoints.length; i++) {
      if (!panic && !endpoints[i]!.available) continue;
      // Back from unavailable: its turn starts now, not at a deadline long past.
      if (deadlines[i]! < this.time) deadlines[i] = this.time;
      if (deadlines[i]! < earliest) {
        earliest = deadlines[i]!;
        best = i;
      }
    }
    if (best < 0) return -1;
    this.time = earliest;
    const e = endpoints[best]!;
    deadlines[best] = earliest + (e.inFlight + 1) / e.weight;
    return best;
  }
}
