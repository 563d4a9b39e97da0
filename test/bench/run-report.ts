/**
 * The markdown report of `npm run bench` (run.ts): the tables, the paired A/B figures and a line per
 * issue target, printed and written to `test/bench/runs/last-run.md`.
 */
import { isPinned } from "./procs.js";
import { hasNginx } from "./nginx-upstream.js";
import { countersTable, fmt, mainTable, median, pairedTable, ratioTable, type Row } from "./report.js";
import { machine } from "./targets.js";
import type { OpenLoopSection } from "./open-loop-runs.js";
import { readmeSection } from "./readme-table.js";
import { runtimeLines } from "./runtimes-report.js";
import { olderTargetLines } from "./targets-report.js";

/** The run's settings and the sections measured outside the main rounds. */
export interface ReportContext {
  rounds: number;
  seconds: number;
  connections: number;
  path: string;
  overLimitRps: number;
  tracingNotes: string[];
  openLoop: OpenLoopSection;
  elapsedS: number;
}

/** The whole report. */
export function report(rows: Row[], extra: Row[], ctx: ReportContext): string {
  const lines = [
    `### Benchmark run ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC`,
    "",
    `Machine: ${machine()}. Command: \`npm run bench\` (BENCH_ROUNDS=${ctx.rounds}, BENCH_SECONDS=${ctx.seconds}); ` +
      `wrk 1 thread, ${ctx.connections} keep-alive connections, \`GET ${ctx.path}\` (~300-byte JSON) from ` +
      `${hasNginx ? "nginx" : "a Node upstream"}. ` +
      (isPinned
        ? "The proxy under test alone on core 0; wrk, the upstream, redis-server and the OTLP collector " +
          "stand-in on core 1 (each stands for its own host; taskset); oidc-provider (cold runs) on core 0"
        : "No taskset: processes unpinned") +
      `. Cells interleaved over ${ctx.rounds} rounds; medians with min–max. CPU and RSS are the process ` +
      `under test's (/proc; a workers cell's whole process tree). Gateway: built dist/, access log at info ` +
      `to /dev/null, warm token cache. Total bench time ${fmt(ctx.elapsedS, 0)} s.`,
    "",
    ...readmeSection(rows, extra, ctx.openLoop),
    "#### Every measured figure",
    "",
    mainTable(rows),
    "",
    ratioTable(rows, "h"),
    "",
    pairedTable(rows, [
      ["d", "f"],
      ["d", "dm"],
      ["c", "g"],
      ["d", "w2"],
      ["u1", "u2"],
      ["d", "d*"],
      ["c", "c*"],
      ["d", "dj"],
      ["dl", "dj"],
      ["d", "dl"],
      // Issue 41's feature cells (dd answers a decision: another call shape).
      ["d", "db"],
      ["d", "dc"],
      ["d", "du"],
      ["d", "dd"],
      // BENCH_NODES: each runtime's gateways against this one's (variants.ts).
      ...rows.filter((r) => /^[cd]@/.test(r.id)).map((r) => [r.id.slice(0, 1), r.id] as const),
    ]),
    "",
    ...tracingSection(rows, ctx.tracingNotes),
    "Per request (warm cells; expected: 1 EVALSHA, 0 token-source and introspection calls):",
    "",
    countersTable(rows),
    "",
    ...ctx.openLoop.lines,
    "Cache churn (10k distinct tokens and identities cycled by the wrk script, measured after one " +
      "pass over them filled the cache; RSS after) and cold " +
      "tokens (every token new to the gateway: opaque ones introspected by oidc-provider on the same core, " +
      "JWTs from the same provider validated locally):",
    "",
    mainTable(extra),
    "",
    countersTable(extra),
    "",
    ...extra.filter((r) => r.note !== undefined).map((r) => `- ${r.id}: ${r.note}`),
    "",
    ...overLimitLines(
      rows.find((r) => r.id === "g"),
      ctx.overLimitRps,
    ),
    ...workersLines(rows.find((r) => r.id === "w2")),
    ...runtimeLines(rows),
    ...olderTargetLines(rows, extra),
  ];
  return lines.join("\n") + "\n";
}

/** Tracing against tracing off (d), paired per round; the 1.0 cell's cost per request. */
function tracingSection(rows: readonly Row[], notes: string[]): string[] {
  const d = rows.find((r) => r.id === "d");
  const t100 = rows.find((r) => r.id === "t100");
  if (d === undefined || d.samples.length === 0 || notes.length === 0) return [];
  const lines = [
    "Tracing (issue 16; target: t1 within 3 % of d), paired with d (tracing off) round by round:",
    "",
    pairedTable(rows, [
      ["d", "t1"],
      ["d", "t100"],
    ]),
    "",
  ];
  if (t100 !== undefined && t100.samples.length > 0) {
    const n = Math.min(d.samples.length, t100.samples.length);
    const extra = Array.from(
      { length: n },
      (_, i) => t100.samples[i]!.cpuUsPerReq - d.samples[i]!.cpuUsPerReq,
    );
    lines.push(
      `Cost of sample_ratio 1.0: ${fmt(median(extra), 1)} µs CPU per request more than d ` +
        `(per round: ${extra.map((x) => fmt(x, 1)).join(", ")}).`,
      "",
    );
  }
  return [...lines, ...notes, ""];
}

/** Cell g: how many Redis calls a rejected request cost, and how many were answered locally. */
function overLimitLines(g: Row | undefined, limit: number): string[] {
  if (g === undefined || g.samples.length === 0) return [];
  const perRejected = g.samples.map((s) => {
    const rejected = s.non2xx;
    const evalsha = (s.redisPerReq?.evalsha ?? 0) * s.requests;
    return { rejected, perRejected: (evalsha - (s.requests - rejected)) / Math.max(rejected, 1), s };
  });
  const fmt3 = (x: number) => x.toFixed(4);
  return [
    `Over-limit caller (g, ${limit} calls/s admitted): per round, ` +
      perRejected
        .map(
          (x) =>
            `${Math.round(x.s.rps)} req/s offered (${(x.s.rps / limit).toFixed(0)}x the limit), ` +
            `${((x.rejected / x.s.requests) * 100).toFixed(1)} % rejected, ` +
            `${fmt3(x.perRejected)} Redis calls per rejected request, ${x.s.localRejections ?? 0} answered locally`,
        )
        .join("; ") +
      ".",
    "",
  ];
}

/** Cell w2: the primary's share of the process group's CPU per request. */
function workersLines(w2: Row | undefined): string[] {
  if (w2 === undefined || w2.samples.length === 0) return [];
  return [
    "workers: 2 (w2): the primary (line relay and connection hand-off) per round " +
      w2.samples
        .map((s) => `${(s.primaryCpuUsPerReq ?? NaN).toFixed(1)} of ${s.cpuUsPerReq.toFixed(0)} µs/req`)
        .join(", ") +
      ".",
    "",
  ];
}
