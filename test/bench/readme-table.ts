/**
 * The report's "For the README" section: the one table the README's Performance
 * section shows, every cell in a row (saturation, CPU, latency at 50 % and 80 % of the bare
 * http-proxy's capacity, what the collector did per request, RSS), then issue 41's targets and
 * issue 29's with their distance, ready to paste from `test/bench/runs/last-run.md`.
 */
import type { OpenLoopSection, OpenLoopSummary } from "./open-loop-runs.js";
import { fmt, med, median, type Row } from "./report.js";
import type { GcPerRequest } from "./gc-window.js";
import { issue41Lines } from "./targets-report.js";

/** The base cell: bare http-proxy 1.18. */
const BASE = "h";

function gcOf(row: Row, at50: OpenLoopSummary | undefined): { gc: GcPerRequest[]; where: string } {
  const open = (at50?.gc ?? []).filter((g): g is GcPerRequest => g !== undefined);
  if (open.length > 0) return { gc: open, where: "" };
  const sat = row.samples.map((s) => s.gc).filter((g): g is GcPerRequest => g !== undefined);
  return { gc: sat, where: sat.length > 0 ? " †" : "" };
}

/** `x` with `digits`, "–" when not measured. */
const f = (x: number | undefined, digits: number): string => (x === undefined ? "–" : fmt(x, digits));

/** The README's table and target lines from one run. */
export function readmeSection(rows: readonly Row[], extra: readonly Row[], open: OpenLoopSection): string[] {
  const ran = rows.filter((r) => r.pending === undefined && r.samples.length > 0);
  const base = ran.find((r) => r.id === BASE);
  const baseRps = base === undefined ? NaN : med(base.samples, (s) => s.rps);
  const at = (id: string, fraction: number) =>
    open.summaries.find((s) => s.id === id && s.fraction === fraction);
  const out = [
    "#### For the README (Performance, one run)",
    "",
    `Saturation: wrk, medians over rounds. Latency at 50 % and 80 % of ${BASE}'s saturation rate: the ` +
      "open-loop generator, medians over rounds. Collector per request: over the 50 % open-loop runs " +
      "(† where the cell ran saturated only), young collections per 10k requests with their p99 pause.",
    "",
    "| cell | req/s | × h | CPU µs/req | p99 ms at 50 % | p99.9 ms at 50 % | p99 ms at 80 % | KiB alloc/req | B promoted/req | young GCs/10k (p99 ms) | RSS MB |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const r of [...ran, ...extra.filter((x) => x.pending === undefined && x.samples.length > 0)]) {
    const rps = med(r.samples, (s) => s.rps);
    const h50 = at(r.id, 0.5);
    const h80 = at(r.id, 0.8);
    const { gc, where } = gcOf(r, h50);
    const g = (pick: (x: GcPerRequest) => number) => (gc.length === 0 ? undefined : median(gc.map(pick)));
    const young = g((x) => x.youngPer10k);
    out.push(
      `| ${r.id}. ${r.label} | ${fmt(rps, 0)} | ${fmt(rps / baseRps, 2)} | ${fmt(
        med(r.samples, (s) => s.cpuUsPerReq),
        0,
      )} | ${f(h50?.p99Ms, 2)} | ${f(h50?.p999Ms, 2)} | ${f(h80?.p99Ms, 2)} | ` +
        `${f(
          g((x) => x.allocKiB),
          1,
        )}${where} | ${f(
          g((x) => x.promotedBytes),
          0,
        )}${where} | ${
          young === undefined
            ? "–"
            : `${fmt(young, 1)} (${f(
                g((x) => x.youngP99Ms),
                2,
              )})`
        }${where} | ${r.rssMb === undefined ? "–" : fmt(r.rssMb, 0)} |`,
    );
  }
  out.push(
    "",
    ...issue41Lines(ran, extra, open.summaries),
    "Issue 29's targets (latency at half load, and the earlier throughput and memory ones):",
    "",
    ...targetTable(ran, extra, at, baseRps),
    "",
  );
  return out;
}

/** The issue 29 targets with their distance (value − target; negative is met for "≤"). */
function targetTable(
  rows: readonly Row[],
  extra: readonly Row[],
  at: (id: string, fraction: number) => OpenLoopSummary | undefined,
  baseRps: number,
): string[] {
  const rps = (id: string) => {
    const r = rows.find((x) => x.id === id);
    return r === undefined ? NaN : med(r.samples, (s) => s.rps);
  };
  const h50 = at(BASE, 0.5);
  const d50 = at("d", 0.5);
  const rss = (id: string) => extra.find((x) => x.id === id)?.rssMb ?? NaN;
  const lines: [string, number, "≤" | "≥", number, number][] = [
    ["d p99 at 50 % (ms) ≤ h p99 + 1 ms", d50?.p99Ms ?? NaN, "≤", (h50?.p99Ms ?? NaN) + 1, 2],
    ["d p99.9 at 50 % (ms) ≤ 2 × h p99.9", d50?.p999Ms ?? NaN, "≤", 2 * (h50?.p999Ms ?? NaN), 2],
    ["d saturation (req/s) > 80 % of h's (no unbounded queueing at 80 %)", rps("d"), "≥", 0.8 * baseRps, 0],
    ["d req/s ≥ 1.1 × h", rps("d") / baseRps, "≥", 1.1, 2],
    ["c req/s ≥ 1.3 × h", rps("c") / baseRps, "≥", 1.3, 2],
    ["RSS after the churn, memory store (MB) ≤ 150", rss("churn-m"), "≤", 150, 0],
    ["RSS after the churn, Redis store (MB) ≤ 150", rss("churn-r"), "≤", 150, 0],
  ];
  const out = ["| target | this run | target | distance | |", "| --- | ---: | ---: | ---: | --- |"];
  for (const [what, value, op, target, digits] of lines) {
    if (!Number.isFinite(value) || !Number.isFinite(target)) {
      out.push(`| ${what} | – | | | not measured |`);
      continue;
    }
    const met = op === "≤" ? value <= target : value >= target;
    const d = value - target;
    out.push(
      `| ${what} | ${fmt(value, digits)} | ${op} ${fmt(target, digits)} | ${d >= 0 ? "+" : ""}${fmt(d, digits)} | ${met ? "met" : "missed"} |`,
    );
  }
  return out;
}
