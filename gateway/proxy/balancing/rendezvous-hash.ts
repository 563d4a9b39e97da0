/**
 * Weighted rendezvous (highest random weight) hashing: Thaler and Ravishankar, "Using Name-Based
 * Mappings to Increase Hit Rates" (IEEE/ACM ToN 6(1), 1998); the weighted score
 * `-weight / ln(h)` with `h` uniform in (0, 1) is Schindelhauer and Schomaker's ("Weighted
 * Distributed Hash Tables", SPAA 2005, their logarithmic method; Ceph CRUSH's straw2 buckets use it).
 * Each available endpoint scores the key; the highest score wins. P(endpoint i wins) =
 * weight_i / sum(weights), and removing or adding an endpoint changes no other endpoint's score, so
 * only the keys it wins (or won) move.
 *
 * `h` takes 52 bits from two independent 32-bit lanes: MurmurHash3 of the key with two seeds,
 * each XORed with MurmurHash3 of the endpoint's name (same seeds, computed once here) and mixed by
 * `fmix32`. The key is hashed once per pick, whatever the number of endpoints.
 */
import { fmix32, murmur3Utf16Pair } from "./murmur3.js";
import { SmoothWeightedRoundRobin } from "./smooth-weighted-round-robin.js";
import type { Balancer, BalancedEndpoint } from "./types.js";

/** The two lanes' seeds: arbitrary fixed odd constants (the same in every process and worker). */
const SEED_HI = 0x9e3779b1;
const SEED_LO = 0x7f4a7c15;
const TWO_POW_20 = 0x100000;
const TWO_POW_52 = 2 ** 52;

/** SPEC §16 `consistent_hash`: rendezvous hashing on the key; calls without one by round robin. */
export class RendezvousHash implements Balancer {
  private readonly nameHi: Uint32Array;
  private readonly nameLo: Uint32Array;
  /** With equal weights the largest `h` wins, and no logarithm is needed. */
  private readonly equalWeights: boolean;
  private readonly spreader: SmoothWeightedRoundRobin;
  /** The key's two lanes, written by each pick (a scratch buffer, so the pick allocates nothing). */
  private readonly keyHash = new Uint32Array(2);

  /** @param endpoints - the upstream's endpoints (read on every pick, never changed here) */
  constructor(private readonly endpoints: readonly BalancedEndpoint[]) {
    this.nameHi = new Uint32Array(endpoints.length);
    this.nameLo = new Uint32Array(endpoints.length);
    endpoints.forEach((e, i) => {
      murmur3Utf16Pair(e.name, SEED_HI, SEED_LO, this.keyHash);
      this.nameHi[i] = this.keyHash[0]!;
      this.nameLo[i] = this.keyHash[1]!;
    });
    this.equalWeights = endpoints.every((e) => e.weight === endpoints[0]!.weight);
    this.spreader = new SmoothWeightedRoundRobin(endpoints);
  }

  /** @inheritDoc Balancer.pick */
  pick(key: string | undefined, panic: boolean): number {
    if (key === undefined) return this.spreader.pick(undefined, panic);
    const endpoints = this.endpoints;
    const keyHash = this.keyHash;
    murmur3Utf16Pair(key, SEED_HI, SEED_LO, keyHash);
    const keyHi = keyHash[0]!;
    const keyLo = keyHash[1]!;
    let best = -1;
    let bestScore = -Infinity;
    for (let i = 0; i < endpoints.length; i++) {
      const e = endpoints[i]!;
      if (!panic && !e.available) continue;
      // 52 bits in [0, 2^52): exact in a double, and + 0.5 keeps h strictly inside (0, 1).
      const bits = fmix32(keyHi ^ this.nameHi[i]!) * TWO_POW_20 + (fmix32(keyLo ^ this.nameLo[i]!) >>> 12);
      const score = this.equalWeights ? bits : -e.weight / Math.log((bits + 0.5) / TWO_POW_52);
      if (score > bestScore) {
        bestScore = score;
        best = i;
      }
    }
    return best;
  }
}
