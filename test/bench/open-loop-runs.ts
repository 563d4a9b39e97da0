/**
 * Latency at a fixed offered rate. Each cell is driven by the open-loop generator
 * (`open-loop.ts`, on the load core) at 50 % and 80 % of the bare http-proxy 1.18 cell's saturation
 * rate from the same run, interleaved over rounds; the table gives medians over rounds.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { LOAD_CORE, pinned } from "./procs.js";
import { gcRead, gcStart, type GcPerRequest } from "./gc-window.js";
import { fmt, GC_HEADS, gcCells, median } from "./report.js";

const HERE = fileURLToPath(new URL(".", import.meta.url));

/** What one open-loop run printed (rates in req/s, latencies in ms from each request's due time). */
export interface OpenLoopResult {
  offered: number;
  achieved: number;
  requests: number;
  /** Every request answered, the warm-up's included (the collector's window spans them all). */
  answered: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  errors: number;
  non2xx: number;
  /** The server's collector over the run, per request (when instrumented). */
  gc?: GcPerRequest;
}

/** A cell driven at a fixed rate. */
export interface OpenLoopCell {
  id: string;
  label: string;
  /** URL of the benched path. */
  url: string;
  token?: string;
  /** The server's pid (its collector's window, gc-stats.mjs). */
  pid?: number;
}

/** Runs the generator once against `url` at `rate` req/s for `seconds` (plus its 1 s warm-up). */
export function runOpenLoop(
  url: string,
  rate: number,
  seconds: number,
  connections: number,
  token?: string,
): Promise<OpenLoopResult> {
  const args = ["--import", "tsx", path.join(HERE, "open-loop.ts"), url, String(rate), String(seconds)];
  args.push(String(connections), ...(token === undefined ? [] : [token]));
  const [cmd, argv] = pinned(LOAD_CORE, process.execPath, args);
  return new Promise((resolve, reject) => {
    execFile(cmd, argv, { timeout: (seconds + 20) * 1000 }, (err, stdout, stderr) => {
      if (err !== null) reject(new Error(`open-loop generator: ${err.message} ${stderr.slice(0, 300)}`));
      else resolve(JSON.parse(stdout.trim().split("\n").at(-1)!) as OpenLoopResult);
    });
  });
}

/** One cell's medians at one offered rate (ms, req/s; the collector's figures per request). */
export interface OpenLoopSummary {
  id: string;
  /** Fraction of the base cell's saturation rate: 0.5 or 0.8. */
  fraction: number;
  achieved: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  gc: (GcPerRequest | undefined)[];
}

/** The open-loop section: the report's lines and each cell's medians per rate. */
export interface OpenLoopSection {
  lines: string[];
  summaries: OpenLoopSummary[];
}

/**
 * Drives every cell at 50 % and 80 % of `baseRps`, `rounds` times, interleaved.
 * @returns the report's lines (a table per rate and the target line: gateway d at 50 %) and the
 *   medians per cell and rate
 */
export async function openLoopSection(
  cells: readonly OpenLoopCell[],
  baseRps: number,
  opts: {
    rounds: number;
    seconds: number;
    connections: number;
    baseId: string;
    gatewayId: string;
    /** Runs before each measured run of a cell (a closed-loop warm-up after its idle time). */
    warm: (cell: OpenLoopCell) => Promise<void>;
  },
): Promise<OpenLoopSection> {
  const fractions = [0.5, 0.8];
  const results = new Map<string, OpenLoopResult[]>();
  for (let round = 0; round < opts.rounds; round++) {
    for (const f of fractions) {
      const rate = Math.round(baseRps * f);
      for (let i = 0; i < cells.length; i++) {
        const cell = cells[(i + round) % cells.length]!;
        await opts.warm(cell);
        // The window spans the generator's 1 s warm-up too: per request of every answered one.
        if (cell.pid !== undefined) await gcStart(cell.pid);
        const r = await runOpenLoop(cell.url, rate, opts.seconds, opts.connections, cell.token).catch(
          (e: Error) => {
            console.log(`  open-loop ${cell.id} @ ${rate}/s failed: ${e.message}`);
            return null;
          },
        );
        const gc = cell.pid === undefined ? undefined : await gcRead(cell.pid, r?.answered ?? 0);
        if (r === null) continue;
        if (gc !== undefined) r.gc = gc;
        const key = `${cell.id}@${f}`;
        results.set(key, [...(results.get(key) ?? []), r]);
        console.log(
          `  open-loop round ${round + 1}/${opts.rounds} ${cell.id.padEnd(3)} @ ${rate}/s: ` +
            `p50 ${fmt(r.p50Ms, 2)} p99 ${fmt(r.p99Ms, 2)} p99.9 ${fmt(r.p999Ms, 2)} ms, ` +
            `${fmt(r.achieved, 0)} req/s answered 2xx, ${r.errors} errors`,
        );
      }
    }
  }
  const m = (key: string, pick: (r: OpenLoopResult) => number) => median((results.get(key) ?? []).map(pick));
  const lines = [
    `Open loop: a constant offered rate from the bench's own generator (latency ` +
      `counted from each request's due time, so queueing shows), ${opts.connections} connections, ` +
      `${opts.seconds} s per run after 1 s of warm-up, ${opts.rounds} rounds interleaved, medians. ` +
      `Rates are 50 % and 80 % of cell ${opts.baseId}'s saturation median (${fmt(baseRps, 0)} req/s).`,
    "",
  ];
  for (const f of fractions) {
    const rate = Math.round(baseRps * f);
    const baseP99 = m(`${opts.baseId}@${f}`, (r) => r.p99Ms);
    lines.push(
      `| at ${f * 100} % (${fmt(rate, 0)} req/s offered) | answered req/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | errors | p99 − ${opts.baseId} p99 | ${GC_HEADS} |`,
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    );
    for (const c of cells) {
      const key = `${c.id}@${f}`;
      const runs = results.get(key) ?? [];
      if (runs.length === 0) {
        lines.push(`| ${c.id}. ${c.label} | no run | | | | | | | | | | | |`);
        continue;
      }
      const p99 = m(key, (r) => r.p99Ms);
      const errors = runs.reduce((a, r) => a + r.errors + r.non2xx, 0);
      lines.push(
        `| ${c.id}. ${c.label} | ${fmt(
          m(key, (r) => r.achieved),
          0,
        )} | ${fmt(
          m(key, (r) => r.p50Ms),
          2,
        )} | ` +
          `${fmt(
            m(key, (r) => r.p90Ms),
            2,
          )} | ${fmt(p99, 2)} | ${fmt(
            m(key, (r) => r.p999Ms),
            2,
          )} | ` +
          `${fmt(
            m(key, (r) => r.maxMs),
            2,
          )} | ${errors} | ${c.id === opts.baseId ? "" : `${p99 - baseP99 >= 0 ? "+" : ""}${fmt(p99 - baseP99, 2)}`} | ` +
          `${gcCells(runs.map((r) => r.gc))} |`,
      );
    }
    lines.push("");
  }
  const summaries: OpenLoopSummary[] = [];
  for (const c of cells)
    for (const f of fractions) {
      const key = `${c.id}@${f}`;
      if ((results.get(key) ?? []).length === 0) continue;
      summaries.push({
        id: c.id,
        fraction: f,
        achieved: m(key, (r) => r.achieved),
        p50Ms: m(key, (r) => r.p50Ms),
        p99Ms: m(key, (r) => r.p99Ms),
        p999Ms: m(key, (r) => r.p999Ms),
        gc: (results.get(key) ?? []).map((r) => r.gc),
      });
    }
  const dP99 = m(`${opts.gatewayId}@0.5`, (r) => r.p99Ms);
  const bP99 = m(`${opts.baseId}@0.5`, (r) => r.p99Ms);
  if (Number.isFinite(dP99) && Number.isFinite(bP99)) {
    const d = dP99 - bP99;
    lines.push(
      `Targets: ${opts.gatewayId} p99 ≤ ${opts.baseId} p99 + 1 ms at 50 % → ${d >= 0 ? "+" : ""}${fmt(d, 2)} ms ` +
        `(${d <= 1 ? "met" : "missed"}).`,
      "",
    );
  }
  return { lines, summaries };
}
