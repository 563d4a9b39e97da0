/**
 * The report's target lines: issue 41's (performance, round four), each with its measured value,
 * the target and the distance, then the older issues' (14, 16, 17) lines as they were.
 */
import type { OpenLoopSummary } from "./open-loop-runs.js";
import { fmt, med, median, pairedRatios, type Row } from "./report.js";

/** One target read from a run. */
interface Check {
  /** What is measured, e.g. "d/h". */
  name: string;
  /** This run's value; NaN when it did not run. */
  value: number;
  op: "≥" | "≤";
  target: number;
  digits: number;
  /** Unit after each figure, e.g. " ms". */
  unit?: string;
  /** After the target, e.g. how it was derived. */
  targetNote?: string;
}

/** Issue 41's feature cells, each paired with d round by round. */
const FEATURE_CELLS = ["db", "dc", "du"] as const;
/** Issue 41: a feature costs at most this CPU per request over d (ratio). */
const FEATURE_CPU_MAX = 1.1;
/** Issue 41: the RSS after the churn (MB). */
const CHURN_RSS_MAX_MB = 150;

/** Median req/s of row `id`, NaN when it did not run. */
export function rps(rows: readonly Row[], id: string): number {
  const r = rows.find((x) => x.id === id);
  return r === undefined || r.samples.length === 0 ? NaN : med(r.samples, (s) => s.rps);
}

/** Median over rounds of `alt`'s req/s over `base`'s in the same round (paired), NaN if missing. */
export function paired(rows: readonly Row[], base: string, alt: string): number {
  return median(pairedRatios(rows, base, alt, (s) => s.rps));
}

/**
 * `- <name> <value>, target <op> <target>: met|missed by <distance> (<distance / target> %)`, or
 * `- <name>: not run`.
 */
export function checkLine(c: Check): string {
  const u = c.unit ?? "";
  if (!Number.isFinite(c.value) || !Number.isFinite(c.target)) return `- ${c.name}: not run`;
  const margin = c.op === "≥" ? c.value - c.target : c.target - c.value;
  const pct = (Math.abs(margin) / Math.abs(c.target)) * 100;
  return (
    `- ${c.name} ${fmt(c.value, c.digits)}${u}, target ${c.op} ${fmt(c.target, c.digits)}${u}` +
    `${c.targetNote === undefined ? "" : ` (${c.targetNote})`}: ` +
    `${margin >= 0 ? "met" : "missed"} by ${fmt(Math.abs(margin), c.digits)}${u} (${fmt(pct, 0)} %)`
  );
}

/** p99 at 80 % of h's capacity for `id` against h's p99 there + 1 ms. */
function tailCheck(id: string, open: readonly OpenLoopSummary[]): Check {
  const at80 = (x: string) => open.find((s) => s.id === x && s.fraction === 0.8)?.p99Ms ?? NaN;
  const h = at80("h");
  return {
    name: `${id} p99 at 80 % of h's capacity`,
    value: at80(id),
    op: "≤",
    target: h + 1,
    digits: 2,
    unit: " ms",
    targetNote: `h's p99 ${fmt(h, 2)} ms + 1 ms`,
  };
}

/** Paired per round: `id`'s CPU µs per request over d's, and its median difference in µs. */
function cpuOverD(rows: readonly Row[], id: string): { ratio: number; deltaUs: number; rounds: number } {
  const ratios = pairedRatios(rows, "d", id, (s) => s.cpuUsPerReq);
  const d = rows.find((r) => r.id === "d")?.samples ?? [];
  const alt = rows.find((r) => r.id === id)?.samples ?? [];
  const deltas = ratios.map((_, i) => alt[i]!.cpuUsPerReq - d[i]!.cpuUsPerReq);
  return { ratio: median(ratios), deltaUs: median(deltas), rounds: ratios.length };
}

/** A feature cell's CPU per request over d (≤ 1.10, paired); dd is shown but is another call shape. */
function featureCpuLine(rows: readonly Row[], id: string): string {
  const { ratio, deltaUs, rounds } = cpuOverD(rows, id);
  const name = `${id}/d CPU µs per request (paired, median of ${rounds} round${rounds === 1 ? "" : "s"})`;
  if (!Number.isFinite(ratio)) return `- ${id}/d CPU µs per request: not run`;
  const extra = ` [${deltaUs >= 0 ? "+" : ""}${fmt(deltaUs, 1)} µs per call]`;
  if (id === "dd")
    return (
      `- ${name} ${fmt(ratio, 3)}${extra}: a decision proxies nothing, so it is a different call ` +
      `shape from d's (no target; SPEC §23 asks it to be no dearer than the proxied path)`
    );
  return checkLine({ name, value: ratio, op: "≤", target: FEATURE_CPU_MAX, digits: 3 }) + extra;
}

/**
 * Issue 41's targets: throughput against h and fy, the tail at 80 % of h's capacity, RSS after the
 * churn, and each feature cell's CPU per request over d.
 */
export function issue41Lines(
  rows: readonly Row[],
  extra: readonly Row[],
  open: readonly OpenLoopSummary[],
): string[] {
  const ratio = (a: string, b: string, target: number): Check => ({
    name: `${a}/${b} (req/s medians)`,
    value: rps(rows, a) / rps(rows, b),
    op: "≥",
    target,
    digits: 2,
  });
  const rss = (id: string): Check => ({
    name: `${id} RSS after the churn`,
    value: extra.find((r) => r.id === id && r.pending === undefined)?.rssMb ?? NaN,
    op: "≤",
    target: CHURN_RSS_MAX_MB,
    digits: 0,
    unit: " MB",
  });
  return [
    "Targets of issue 41 (performance, round four), read from this run:",
    "",
    checkLine(ratio("d", "h", 1.5)),
    checkLine(ratio("d", "fy", 1.5)),
    checkLine(ratio("c", "h", 1.7)),
    checkLine(tailCheck("c", open)),
    checkLine(tailCheck("d", open)),
    checkLine(rss("churn-m")),
    checkLine(rss("churn-r")),
    ...FEATURE_CELLS.map((id) => featureCpuLine(rows, id)),
    featureCpuLine(rows, "dd"),
    "",
  ];
}

/** One line per older issue target read from this run (issues 14, 16 and 17), as they were. */
export function olderTargetLines(rows: readonly Row[], extra: readonly Row[]): string[] {
  const checks: [string, number, number][] = [
    ["gateway on Redis (d) ≥ 1.1× bare http-proxy 1.18 (h)", rps(rows, "d") / rps(rows, "h"), 1.1],
    ["gateway on Redis (d) ≥ 1.3× the Fastify peer (fy)", rps(rows, "d") / rps(rows, "fy"), 1.3],
    ["gateway, memory store (c) ≥ 1.3× bare http-proxy 1.18 (h)", rps(rows, "c") / rps(rows, "h"), 1.3],
    ["warm JWT within 3 % of the warm token cache (dj/d, paired)", paired(rows, "d", "dj"), 0.97],
    [
      "warm JWT within 3 % of a warm opaque token of the same length (dj/dl, paired)",
      paired(rows, "dl", "dj"),
      0.97,
    ],
    ["tracing at sample_ratio 0.01 within 3 % of tracing off (t1/d, paired)", paired(rows, "d", "t1"), 0.97],
    ["cold JWTs ≥ 5× cold introspection (cold-jwt/cold)", rps(extra, "cold-jwt") / rps(extra, "cold"), 5],
  ];
  const out = ["Older targets (issues 14, 16 and 17) read from this run:", ""];
  for (const [what, value, target] of checks) {
    if (!Number.isFinite(value)) continue;
    out.push(`- ${what}: ${fmt(value, 3)} (${value >= target ? "met" : "missed"})`);
  }
  return out.length > 2 ? [...out, ""] : [];
}
