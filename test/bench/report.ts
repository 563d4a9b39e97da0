/**
 * Statistics over rounds (median, min-max) and the markdown report printed at the end of a run and
 * written to `test/bench/runs/last-run.md`.
 */

import type { GcPerRequest } from "./gc-window.js";

/** One measured wrk run of one cell. */
export interface Sample {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** CPU of the process under test per request (µs). */
  cpuUsPerReq: number;
  non2xx: number;
  socketErrors: number;
  /** Redis commands per request by command (Redis cells). */
  redisPerReq?: Record<string, number>;
  /** Token-source calls (cache misses) per request (gateway cells). */
  sourceCallsPerReq?: number;
  /** Calls to the RFC 7662 endpoint per request (gateway cells). */
  introspectionsPerReq?: number;
  /** CPU of redis-server per request (µs), Redis cells. */
  redisCpuUsPerReq?: number;
  /** CPU of a `workers` gateway's primary alone per request (µs), included in `cpuUsPerReq`. */
  primaryCpuUsPerReq?: number;
  /** Calls answered 429 from the gateway's cache of Redis's 429s (gateway cells). */
  localRejections?: number;
  /** What the collector did per request (servers started with gc-stats.mjs). */
  gc?: GcPerRequest;
}

/** A row of the table. */
export interface Row {
  id: string;
  label: string;
  samples: Sample[];
  /** Why the row has no figures (e.g. the Redis store is not ready yet). */
  pending?: string;
  rssMb?: number;
  note?: string;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const fmt = (x: number, digits: number): string =>
  Number.isFinite(x)
    ? x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : "–";

/** `median (min–max)` of one field. */
export function spread(samples: readonly Sample[], pick: (s: Sample) => number, digits: number): string {
  const xs = samples.map(pick);
  if (xs.length === 0) return "–";
  if (xs.length === 1) return fmt(xs[0]!, digits);
  return `${fmt(median(xs), digits)} (${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)})`;
}

export function med(samples: readonly Sample[], pick: (s: Sample) => number): number {
  return median(samples.map(pick));
}

/** Column heads of {@link gcCells}. */
export const GC_HEADS =
  "KiB alloc/req | B promoted/req | young GCs/10k req (p99 ms) | full GCs/10k req (p99 ms)";

/**
 * What the collector did per request over a cell's runs (medians): KiB allocated, bytes promoted to
 * the old generation, young and full collections per 10 000 requests with their p99 pause.
 * @returns the table's 4 cells ("–" where the server was not instrumented)
 */
export function gcCells(gcs: readonly (GcPerRequest | undefined)[]): string {
  const xs = gcs.filter((g): g is GcPerRequest => g !== undefined);
  if (xs.length === 0) return "– | – | – | –";
  const m = (pick: (g: GcPerRequest) => number) => median(xs.map(pick));
  return (
    `${fmt(
      m((g) => g.allocKiB),
      1,
    )} | ${fmt(
      m((g) => g.promotedBytes),
      0,
    )} | ` +
    `${fmt(
      m((g) => g.youngPer10k),
      1,
    )} (${fmt(
      m((g) => g.youngP99Ms),
      2,
    )}) | ` +
    `${fmt(
      m((g) => g.fullPer10k),
      2,
    )} (${fmt(
      m((g) => g.fullP99Ms),
      2,
    )})`
  );
}

/** The main table: one row per cell. */
export function mainTable(rows: readonly Row[]): string {
  const out = [
    `| cell | req/s median (min–max) | p50 ms | p99 ms | CPU µs/req | ${GC_HEADS} | RSS MB | non-2xx / socket errors |`,
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const r of rows) {
    if (r.pending !== undefined) {
      out.push(`| ${r.id}. ${r.label} | pending: ${r.pending} | | | | | | | | | |`);
      continue;
    }
    const s = r.samples;
    const errs = `${s.reduce((a, x) => a + x.non2xx, 0)} / ${s.reduce((a, x) => a + x.socketErrors, 0)}`;
    out.push(
      `| ${r.id}. ${r.label} | ${spread(s, (x) => x.rps, 0)} | ${spread(s, (x) => x.p50Ms, 2)} | ` +
        `${spread(s, (x) => x.p99Ms, 2)} | ${spread(s, (x) => x.cpuUsPerReq, 0)} | ` +
        `${gcCells(s.map((x) => x.gc))} | ` +
        `${r.rssMb === undefined ? "–" : fmt(r.rssMb, 0)} | ${errs} |`,
    );
  }
  return out.join("\n");
}

/** Issue 17's targets against bare http-proxy 1.18 (cell h) and the Fastify peer. */
const TARGETS: Record<string, string> = { "d/h": "≥ 1.1", "c/h": "≥ 1.3" };

/** Ratios of median req/s against the bare proxy, and p99 distance to the bare p99. */
export function ratioTable(rows: readonly Row[], baseId: string): string {
  const base = rows.find((r) => r.id === baseId);
  if (base === undefined || base.samples.length === 0) return "";
  const baseRps = med(base.samples, (s) => s.rps);
  const baseP99 = med(base.samples, (s) => s.p99Ms);
  const out = [
    `| ratio | req/s vs ${baseId} | p99 − ${baseId} p99 (ms) | target |`,
    "| --- | ---: | ---: | --- |",
  ];
  for (const r of rows) {
    if (r.id === baseId || r.id === "a") continue;
    const target = TARGETS[`${r.id}/${baseId}`] ?? "";
    if (r.pending !== undefined || r.samples.length === 0) {
      out.push(`| ${r.id}/${baseId} | pending | | ${target} |`);
      continue;
    }
    // Per-round ratios show the spread too (cells of a round ran back to back).
    const perRound = r.samples.map((s, i) => s.rps / (base.samples[i]?.rps ?? baseRps));
    const ratio = med(r.samples, (s) => s.rps) / baseRps;
    const range =
      perRound.length > 1 ? ` (${fmt(Math.min(...perRound), 2)}–${fmt(Math.max(...perRound), 2)})` : "";
    const dp99 = med(r.samples, (s) => s.p99Ms) - baseP99;
    out.push(
      `| ${r.id}/${baseId} | ${fmt(ratio, 2)}${range} | ${dp99 >= 0 ? "+" : ""}${fmt(dp99, 2)} | ${target} |`,
    );
  }
  return out.join("\n");
}

/**
 * `altId`'s figure over `baseId`'s, round by round (the cells of a round ran back to back).
 * @returns one ratio per round both rows measured; empty when either row is missing
 */
export function pairedRatios(
  rows: readonly Row[],
  baseId: string,
  altId: string,
  pick: (x: Sample) => number,
): number[] {
  const base = rows.find((r) => r.id === baseId);
  const alt = rows.find((r) => r.id === altId);
  if (base === undefined || alt === undefined) return [];
  const n = Math.min(base.samples.length, alt.samples.length);
  return Array.from({ length: n }, (_, i) => pick(alt.samples[i]!) / pick(base.samples[i]!));
}

/**
 * One table of paired ratios: a row per `[base, alt]` pair that ran (alt/base per round, medians
 * with min–max); "" when none did.
 */
export function pairedTable(rows: readonly Row[], pairs: readonly (readonly [string, string])[]): string {
  const lines: string[] = [];
  for (const [baseId, altId] of pairs) {
    const n = pairedRatios(rows, baseId, altId, (x) => x.rps).length;
    if (n === 0) continue;
    const ratios = (pick: (x: Sample) => number): string => {
      const v = pairedRatios(rows, baseId, altId, pick);
      return `${fmt(median(v), 3)} (${fmt(Math.min(...v), 2)}–${fmt(Math.max(...v), 2)}; ${v.filter((x) => x > 1).length}/${n} rounds above 1)`;
    };
    lines.push(`| ${altId}/${baseId} | ${ratios((x) => x.rps)} | ${ratios((x) => x.cpuUsPerReq)} |`);
  }
  if (lines.length === 0) return "";
  return [
    "| paired A/B | req/s ratio per round | CPU µs/req ratio per round |",
    "| --- | --- | --- |",
    ...lines,
  ].join("\n");
}

/** Commands the limiter's Lua scripts call (counted by INFO commandstats, but not round trips). */
const INSIDE_SCRIPTS = new Set([
  "time",
  "hget",
  "hmget",
  "hset",
  "hincrby",
  "pexpire",
  "expire",
  "pexpireat",
  "pttl",
  "zadd",
  "zcard",
  "zrange",
  "zremrangebyscore",
  "zcount",
  "del",
  "get",
  "set",
]);

/** Per-request counters of the gateway cells (Redis commands, token-source and introspection calls). */
export function countersTable(rows: readonly Row[]): string {
  const out = [
    "| cell | Redis round trips / req | commands run inside the scripts / req | redis-server CPU µs/req | token-source calls / req | introspection calls / req |",
    "| --- | --- | --- | ---: | ---: | ---: |",
  ];
  for (const r of rows) {
    if (r.pending !== undefined || r.samples.length === 0 || r.samples[0]!.sourceCallsPerReq === undefined)
      continue;
    const s = r.samples;
    const cmds = new Map<string, number[]>();
    for (const x of s)
      for (const [k, v] of Object.entries(x.redisPerReq ?? {})) cmds.set(k, [...(cmds.get(k) ?? []), v]);
    const list = (keep: (cmd: string) => boolean) =>
      [...cmds]
        .filter(([k]) => keep(k))
        .map(([k, v]) => `${k} ${fmt(median(v), 3)}`)
        .join(", ") || "–";
    // INFO commandstats also counts the commands a script runs; only the client's calls are round trips.
    const redis = cmds.size === 0 ? "– (memory store)" : list((k) => !INSIDE_SCRIPTS.has(k));
    const inside = cmds.size === 0 ? "–" : list((k) => INSIDE_SCRIPTS.has(k));
    const rcpu = s[0]!.redisCpuUsPerReq === undefined ? "–" : spread(s, (x) => x.redisCpuUsPerReq ?? NaN, 0);
    out.push(
      `| ${r.id}. ${r.label} | ${redis} | ${inside} | ${rcpu} | ${spread(s, (x) => x.sourceCallsPerReq ?? NaN, 4)} | ` +
        `${spread(s, (x) => x.introspectionsPerReq ?? NaN, 4)} |`,
    );
  }
  return out.join("\n");
}

export { fmt };
