/**
 * The balancers of SPEC §16 behind one factory. The upstream owns the endpoint array and keeps each
 * endpoint's `available` and `inFlight` current; a balancer only reads them. An upstream of one
 * endpoint needs no balancer at all.
 */
import { LeastRequest } from "./least-request.js";
import { RendezvousHash } from "./rendezvous-hash.js";
import { SmoothWeightedRoundRobin } from "./smooth-weighted-round-robin.js";
import { WeightedLeastRequest } from "./weighted-least-request.js";
import type { Balancer, BalancedEndpoint } from "./types.js";

export type { Balancer, BalancedEndpoint } from "./types.js";

/** SPEC §16 `balancer`. */
export type BalancerKind = "round_robin" | "least_request" | "consistent_hash";

/**
 * Builds the balancer of one upstream.
 * @param kind - SPEC §16 `balancer`
 * @param endpoints - the upstream's endpoints, in configuration order; the array is kept (not
 *   copied) and read on every pick
 * @param random - uniform in [0, 1), used by `least_request` only; `Math.random` when omitted
 * @param seed - uniform in [0, 1): the seed of `least_request`'s own generator when `random` is
 *   omitted (the gateway passes its clock's jitter source's draw); `Math.random()` when omitted
 * @throws RangeError on an empty endpoint list or a weight that is not a positive integer (the
 *   configuration schema rejects both first; this guards programming errors)
 * @example
 * const endpoints = [{ name: "10.0.0.1:3000", weight: 1, available: true, inFlight: 0 }, ...];
 * const balancer = createBalancer("round_robin", endpoints);
 * let i = balancer.pick(undefined, false);
 * if (i < 0) i = balancer.pick(undefined, true); // every endpoint down: panic routing
 */
export function createBalancer(
  kind: BalancerKind,
  endpoints: readonly BalancedEndpoint[],
  random?: () => number,
  seed?: number,
): Balancer {
  if (endpoints.length === 0) throw new RangeError("a balancer needs at least one endpoint");
  for (const e of endpoints) {
    if (!Number.isSafeInteger(e.weight) || e.weight < 1)
      throw new RangeError(`endpoint ${e.name}: weight must be a positive integer, got ${e.weight}`);
  }
  switch (kind) {
    case "round_robin":
      return new SmoothWeightedRoundRobin(endpoints);
    case "least_request":
      // Equal weights: the power of two choices; unequal: Envoy's weighted least request.
      return endpoints.every((e) => e.weight === endpoints[0]!.weight)
        ? new LeastRequest(endpoints, random, seed)
        : new WeightedLeastRequest(endpoints);
    case "consistent_hash":
      return new RendezvousHash(endpoints);
  }
}
