/**
 * A crossover A/B of two gateway builds on cell d (or c): `run.ts` started several times, each run
 * with fresh processes, the two builds swapping places between runs (A as `d` and B as `d*`, then
 * B as `d` and A as `d*`), so what favours one place or one process does not read as a difference
 * between the builds.
 *
 * Why: within one run the pairing is round by round, but both gateways are the same two processes
 * for every round, and an A/A control of one build read `d*` 1.033 × as fast as `d` over 8 rounds
 * (2026-11-28): a process's own luck (its heap layout, what the JIT inlined, when its collections
 * fell) or its place in the bench is constant within a run and no number of rounds averages it out.
 * Swapping the builds' places between runs cancels a constant place effect in the mean, and fresh
 * processes per run turn a process's luck into spread, which the per-run figures show. This is the
 * crossover design of clinical trials; for why a benchmark needs it, see Mytkowicz et al.,
 * "Producing Wrong Data Without Doing Anything Obviously Wrong!" (ASPLOS 2009) and Curtsinger and
 * Berger, "Stabilizer" (ASPLOS 2013).
 *
 * Per run, the ratio `d*`/`d` of each round's requests per second and CPU per request; its median
 * over the rounds is the run's figure. The build effect is the geometric mean of the runs' figures
 * turned to B/A (a run with B as `d` counts its inverse); the place effect, the geometric mean of
 * the runs' `d*`/`d` whatever the builds (1 when the bench favours neither place).
 *
 * Usage: `node --import tsx test/bench/crossover.ts <A main.js> <B main.js>` (A is usually
 * `dist/gateway/main.js`; B a build compiled elsewhere, see fixed-rate.ts). Environment:
 * CROSSOVER_RUNS (4, rounded up to even), CROSSOVER_CELL (d; c for the memory store), and
 * `run.ts`'s BENCH_ROUNDS (4 here), BENCH_SECONDS, BENCH_CONNECTIONS. Each run takes about
 * (startup + rounds × 2 × (2 + BENCH_SECONDS) s); 4 runs of 4 rounds about 6 minutes.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, type Sample } from "./report.js";

const RUN_TS = fileURLToPath(new URL("./run.ts", import.meta.url));

/** One run's figures: `d*`/`d` per round, and which build was `d*`. */
export interface CrossoverRun {
  /** The build measured as the alternative cell (`d*`): "A" or "B". */
  alt: "A" | "B";
  rpsRatios: number[];
  cpuRatios: number[];
}

/** The build and place effects of a set of runs (ratios; 1 = no effect). */
export interface CrossoverEffects {
  /** B's requests per second over A's (geometric mean over runs). */
  rpsBOverA: number;
  /** B's CPU per request over A's. */
  cpuBOverA: number;
  /** `d*` over `d` whatever the builds: the place (and process) effect the swap cancels. */
  rpsPlace: number;
  cpuPlace: number;
  /**
   * One standard error either side of {@link rpsBOverA} and {@link cpuBOverA} (as ratios), from
   * the spread of the runs within each placement; NaN with fewer than two runs of each.
   */
  rpsBand: [number, number];
  cpuBand: [number, number];
  /** Each run's B/A (requests per second, CPU per request), in run order. */
  perRun: { rps: number; cpu: number }[];
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const mean = (xs: readonly number[]): number => xs.reduce((a, x) => a + x, 0) / Math.max(xs.length, 1);

const geomean = (xs: readonly number[]): number => Math.exp(mean(xs.map(Math.log)));

/** Sample variance (n − 1). */
function variance(xs: readonly number[]): number {
  const m = mean(xs);
  return xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1);
}

/**
 * The build effect's standard error in logs: a run's log(d* over d) is place + build (B as d*) or
 * place − build (A as d*), so build is half the difference of the two groups' means.
 */
function buildBand(logs: readonly number[], alts: readonly ("A" | "B")[]): [number, number] {
  const b = logs.filter((_, i) => alts[i] === "B");
  const a = logs.filter((_, i) => alts[i] === "A");
  const effect = (mean(b) - mean(a)) / 2;
  const se = Math.sqrt(variance(b) / b.length + variance(a) / a.length) / 2;
  return [Math.exp(effect - se), Math.exp(effect + se)];
}

/**
 * Separates the build effect from the place effect (see the module's comment).
 * @param runs - at least one run with each build as `d*` for the place effect to cancel
 */
export function crossoverEffects(runs: readonly CrossoverRun[]): CrossoverEffects {
  const perRun = runs.map((r) => {
    const rps = median(r.rpsRatios);
    const cpu = median(r.cpuRatios);
    return r.alt === "B" ? { rps, cpu } : { rps: 1 / rps, cpu: 1 / cpu };
  });
  const alts = runs.map((r) => r.alt);
  const rpsLogs = runs.map((r) => Math.log(median(r.rpsRatios)));
  const cpuLogs = runs.map((r) => Math.log(median(r.cpuRatios)));
  return {
    rpsBOverA: geomean(perRun.map((p) => p.rps)),
    cpuBOverA: geomean(perRun.map((p) => p.cpu)),
    rpsPlace: Math.exp(mean(rpsLogs)),
    cpuPlace: Math.exp(mean(cpuLogs)),
    rpsBand: buildBand(rpsLogs, alts),
    cpuBand: buildBand(cpuLogs, alts),
    perRun,
  };
}

/** Starts `run.ts` with `base` as every gateway and `alt` as the `*` cell; resolves its samples. */
function benchRun(base: string, alt: string, cell: string, out: string): Promise<Record<string, Sample[]>> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    BENCH_GATEWAY_MAIN: base,
    BENCH_ALT_MAIN: alt,
    BENCH_CELLS: cell,
    BENCH_OPEN_ROUNDS: "0",
    BENCH_ROUNDS: process.env.BENCH_ROUNDS ?? "4",
    BENCH_SAMPLES_JSON: out,
  };
  delete env.BENCH_ALT_NODE_ARGS;
  delete env.BENCH_NODES;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", RUN_TS], {
      env,
      stdio: ["ignore", "pipe", "inherit"],
    });
    child.stdout.setEncoding("utf8");
    // The run's progress, not its table: that is of one run and misleads here.
    let table = false;
    child.stdout.on("data", (t: string) => {
      for (const line of t.split("\n")) {
        table ||= line.startsWith("measured");
        if (!table && line !== "") console.log(`  | ${line}`);
      }
    });
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`run.ts exited ${code}`));
      try {
        resolve(JSON.parse(readFileSync(out, "utf8")) as Record<string, Sample[]>);
      } catch (err) {
        reject(err as Error);
      }
    });
  });
}

async function main(): Promise<number> {
  const [a, b] = process.argv.slice(2).map((p) => path.resolve(p));
  if (a === undefined || b === undefined) {
    console.error("usage: crossover.ts <A main.js> <B main.js>");
    return 2;
  }
  const cell = process.env.CROSSOVER_CELL === "c" ? "c" : "d";
  const requested = Math.min(Math.max(Number(process.env.CROSSOVER_RUNS ?? 4) || 4, 2), 20);
  const count = requested + (requested % 2);
  const dir = mkdtempSync(path.join(tmpdir(), "gateway-crossover-"));
  const runs: CrossoverRun[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const alt = i % 2 === 0 ? "B" : "A";
      console.log(`run ${i + 1}/${count}: ${cell} = ${alt === "B" ? "A" : "B"}, ${cell}* = ${alt}`);
      const samples = await benchRun(
        alt === "B" ? a : b,
        alt === "B" ? b : a,
        cell,
        path.join(dir, `${i}.json`),
      );
      const base = samples[cell] ?? [];
      const other = samples[`${cell}*`] ?? [];
      if (base.length === 0 || base.length !== other.length)
        throw new Error(`run ${i + 1}: cells ${cell}/${cell}* missing`);
      runs.push({
        alt,
        rpsRatios: base.map((s, k) => other[k]!.rps / s.rps),
        cpuRatios: base.map((s, k) => other[k]!.cpuUsPerReq / s.cpuUsPerReq),
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const e = crossoverEffects(runs);
  console.log(
    `\nA = ${a}\nB = ${b}\ncell ${cell}, ${count} runs (fresh processes each), builds swapped between runs`,
  );
  for (const [i, p] of e.perRun.entries())
    console.log(
      `  run ${i + 1} (${runs[i]!.alt} as ${cell}*): B/A ${fmt(p.rps, 3)} × req/s, ${fmt(p.cpu, 3)} × CPU/req`,
    );
  const faster = e.perRun.filter((p) => p.rps > 1).length;
  const band = ([lo, hi]: [number, number]) => `±1 s.e. ${fmt(lo, 3)}–${fmt(hi, 3)}`;
  console.log(
    `B/A: ${fmt(e.rpsBOverA, 3)} × the requests per second (${band(e.rpsBand)}; ${faster}/${count} runs above 1), ` +
      `${fmt(e.cpuBOverA, 3)} × the CPU per request (${band(e.cpuBand)})\n` +
      `place (${cell}* over ${cell}, either build): ${fmt(e.rpsPlace, 3)} × req/s, ${fmt(e.cpuPlace, 3)} × CPU/req`,
  );
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url))
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
