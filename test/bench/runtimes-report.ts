/**
 * The report's runtime comparison (BENCH_NODES, variants.ts): each other runtime's gateways (`c@22`,
 * `d@24`, …) against this process's Node on the same build, paired round by round with c and d.
 */
import { fmt, med, median, pairedRatios, type Row, type Sample } from "./report.js";

/** `median (min–max)` of alt/base per round for one figure, "–" when not paired. */
function pairedCell(rows: readonly Row[], base: string, alt: string, pick: (s: Sample) => number) {
  const v = pairedRatios(rows, base, alt, pick);
  if (v.length === 0) return "–";
  return v.length === 1
    ? fmt(v[0]!, 3)
    : `${fmt(median(v), 3)} (${fmt(Math.min(...v), 2)}–${fmt(Math.max(...v), 2)})`;
}

/**
 * A table of every runtime cell against its base (c or d on `process.version`): req/s and CPU µs
 * per request (medians), and both paired per round; [] when BENCH_NODES added none.
 */
export function runtimeLines(rows: readonly Row[]): string[] {
  const ran = (id: string) =>
    rows.find((r) => r.id === id && r.pending === undefined && r.samples.length > 0);
  const alts = rows.filter((r) => /^[cd]@/.test(r.id));
  if (alts.length === 0) return [];
  const out = [
    `Runtimes (BENCH_NODES): the same build under other Node binaries, paired round by round with ` +
      `c and d on this run's Node ${process.version}:`,
    "",
    "| cell | runtime | req/s | req/s ÷ base (paired) | CPU µs/req | CPU ÷ base (paired) |",
    "| --- | --- | ---: | ---: | ---: | ---: |",
  ];
  for (const base of ["c", "d"]) {
    const b = ran(base);
    if (b !== undefined)
      out.push(
        `| ${base} | Node ${process.version} | ${fmt(
          med(b.samples, (s) => s.rps),
          0,
        )} | 1 | ${fmt(
          med(b.samples, (s) => s.cpuUsPerReq),
          0,
        )} | 1 |`,
      );
    for (const alt of alts.filter((r) => r.id.startsWith(`${base}@`))) {
      const a = ran(alt.id);
      const node = /Node (v[\d.]+)/.exec(alt.label)?.[1] ?? alt.id.slice(2);
      if (a === undefined) {
        out.push(`| ${alt.id} | Node ${node} | pending: ${alt.pending ?? "no samples"} | | | |`);
        continue;
      }
      out.push(
        `| ${alt.id} | Node ${node} | ${fmt(
          med(a.samples, (s) => s.rps),
          0,
        )} | ${pairedCell(rows, base, alt.id, (s) => s.rps)} | ` +
          `${fmt(
            med(a.samples, (s) => s.cpuUsPerReq),
            0,
          )} | ${pairedCell(rows, base, alt.id, (s) => s.cpuUsPerReq)} |`,
      );
    }
  }
  return [...out, ""];
}
