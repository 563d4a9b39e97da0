/**
 * Least request by the power of two choices (Mitzenmacher, "The Power of Two Choices in Randomized
 * Load Balancing", 2001), as Envoy's `LeastRequestLoadBalancer::unweightedHostPickNChoices` in
 * source/extensions/load_balancing_policies/least_request/least_request_lb.cc (envoyproxy/envoy):
 * sample endpoints at random and keep the one with fewer active requests, the first on a tie.
 *
 * It serves upstreams whose endpoints all have the same weight; with unequal weights the factory
 * builds `WeightedLeastRequest` (weighted-least-request.ts: Envoy's EDF schedule of `weight / (active + 1)`) instead.
 *
 * One difference from Envoy, as SPEC §16 words it: the two samples are two DIFFERENT available
 * endpoints (Envoy samples with replacement, so it sometimes compares an endpoint with itself).
 * The comparison keeps the per-weight form (`a.inFlight * b.weight < b.inFlight * a.weight`),
 * which with equal weights is the plain comparison of requests in flight.
 */
import type { Balancer, BalancedEndpoint } from "./types.js";

/** SPEC §16 `least_request`. */
export class LeastRequest implements Balancer {
  /** Indices of the endpoints available at this pick: filled in place, never reallocated. */
  private readonly candidates: Int32Array;

  /** xorshift32 state (never 0), used when no `random` is injected. */
  private readonly state = new Int32Array(1);

  /**
   * @param endpoints - the upstream's endpoints (read on every pick, never changed here)
   * @param seed - uniform in [0, 1): the generator's seed (the gateway's clock's jitter source)
   * @param random - uniform in [0, 1); injected so tests can steer the samples. Without it the
   *   samples come from Marsaglia's xorshift32 ("Xorshift RNGs", J. Stat. Softw. 8(14), 2003,
   *   shifts 13, 17, 5) seeded once from `seed`: each `Math.random()` call allocates a
   *   16-byte heap number in V8 (measured on Node 20), and a pick must allocate nothing.
   */
  constructor(
    private readonly endpoints: readonly BalancedEndpoint[],
    private readonly random?: () => number,
    seed: number = Math.random(),
  ) {
    this.candidates = new Int32Array(endpoints.length);
    this.state[0] = Math.floor(seed * 0xffffffff) + 1;
  }

  /** @inheritDoc Balancer.pick */
  pick(_key: string | undefined, panic: boolean): number {
    const endpoints = this.endpoints;
    const candidates = this.candidates;
    let n = 0;
    for (let i = 0; i < endpoints.length; i++) {
      if (panic || endpoints[i]!.available) candidates[n++] = i;
    }
    if (n === 0) return -1;
    if (n === 1) return candidates[0]!;
    // Two different positions: the second is drawn among the n - 1 others.
    let r1: number;
    let r2: number;
    if (this.random === undefined) {
      // Inline on purpose: a helper returning the double would box it when V8 does not inline it.
      let x = this.state[0]!;
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      r1 = (x >>> 0) / 0x100000000;
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      r2 = (x >>> 0) / 0x100000000;
      this.state[0] = x;
    } else {
      r1 = this.random();
      r2 = this.random();
    }
    const first = Math.min(n - 1, Math.floor(r1 * n));
    let second = Math.min(n - 2, Math.floor(r2 * (n - 1)));
    if (second >= first) second++;
    const a = candidates[first]!;
    const b = candidates[second]!;
    const ea = endpoints[a]!;
    const eb = endpoints[b]!;
    return eb.inFlight * ea.weight < ea.inFlight * eb.weight ? b : a;
  }
}
