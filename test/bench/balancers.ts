/**
 * Micro-benchmark of the SPEC §16 balancers: nanoseconds per `pick` with 3 endpoints,
 * and the bytes each pick allocates (young-generation growth over 10 000 picks; keys for
 * `consistent_hash` are built beforehand; the closure of the measuring loop itself allocates none). Not part of `npm run bench`; run alone:
 *
 *   node --import tsx test/bench/balancers.ts
 *
 * Environment: BALANCER_PICKS per measurement (5 000 000), BALANCER_ROUNDS (5; the median is shown).
 */
import { getHeapSpaceStatistics } from "node:v8";
import {
  createBalancer,
  type BalancedEndpoint,
  type BalancerKind,
} from "../../gateway/proxy/balancing/balancer.js";

const PICKS = Number(process.env.BALANCER_PICKS ?? 5_000_000);
const ROUNDS = Number(process.env.BALANCER_ROUNDS ?? 5);
const KEYS = Array.from({ length: 1024 }, (_, i) => `consumer-${i.toString(36).padStart(6, "0")}`);

const newSpaceUsed = (): number =>
  getHeapSpaceStatistics().find((s) => s.space_name === "new_space")!.space_used_size;

function endpoints(weights: number[]): BalancedEndpoint[] {
  return weights.map((weight, i) => ({ name: `10.0.0.${i + 1}:3000`, weight, available: true, inFlight: i }));
}

/**
 * Bytes allocated per pick: the growth of the young generation over a run short enough to fit in it
 * (a run that saw a scavenge, where the space shrank, is retried).
 */
function bytesPerPick(pick: () => number): number {
  for (let attempt = 0; attempt < 5; attempt++) {
    const before = newSpaceUsed();
    for (let i = 0; i < 10_000; i++) pick();
    const after = newSpaceUsed();
    if (after >= before) return (after - before) / 10_000;
  }
  return NaN;
}

/** @returns [ns per pick, bytes allocated per pick] */
function measure(kind: BalancerKind, weights: number[], keyed: boolean): [number, number] {
  const eps = endpoints(weights);
  const balancer = createBalancer(kind, eps);
  let sink = 0;
  for (let i = 0; i < 100_000; i++) sink += balancer.pick(keyed ? KEYS[i & 1023] : undefined, false);
  const start = process.hrtime.bigint();
  for (let i = 0; i < PICKS; i++) sink += balancer.pick(keyed ? KEYS[i & 1023] : undefined, false);
  const ns = Number(process.hrtime.bigint() - start) / PICKS;
  let k = 0;
  const pick = (): number => balancer.pick(keyed ? KEYS[k++ & 1023] : undefined, false);
  bytesPerPick(pick); // warms the measuring loop itself
  const bytes = bytesPerPick(pick);
  if (sink < 0) console.log(sink);
  return [ns, bytes];
}

const cells: [string, BalancerKind, number[], boolean][] = [
  ["round_robin 1,1,1", "round_robin", [1, 1, 1], false],
  ["round_robin 5,1,1", "round_robin", [5, 1, 1], false],
  ["least_request 1,1,1", "least_request", [1, 1, 1], false],
  ["least_request 3,2,1", "least_request", [3, 2, 1], false],
  ["consistent_hash 1,1,1 (16-char key)", "consistent_hash", [1, 1, 1], true],
  ["consistent_hash 3,2,1 (16-char key)", "consistent_hash", [3, 2, 1], true],
  ["consistent_hash, no key (round robin)", "consistent_hash", [1, 1, 1], false],
];
console.log(`| balancer, 3 endpoints | ns per pick (median of ${ROUNDS}) | bytes allocated per pick |`);
console.log("|---|---:|---:|");
for (const [label, kind, weights, keyed] of cells) {
  const runs: [number, number][] = [];
  for (let r = 0; r < ROUNDS; r++) runs.push(measure(kind, weights, keyed));
  const ns = runs.map((x) => x[0]).sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]!;
  console.log(`| ${label} | ${ns.toFixed(1)} | ${Math.max(...runs.map((x) => x[1])).toFixed(1)} |`);
}
