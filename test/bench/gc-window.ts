/**
 * The harness's side of `gc-stats.mjs`: the `node` flags that load it into a
 * server the bench starts, and the window opened before and read after each measured run, turned
 * into figures per request. `BENCH_GC=0` leaves the preload out (the servers run as before).
 */
import { existsSync, mkdtempSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const PRELOAD = pathToFileURL(fileURLToPath(new URL("./gc-stats.mjs", import.meta.url))).href;
const ENABLED = process.env.BENCH_GC !== "0";
if (ENABLED) process.env.BENCH_GC_SOCKET_DIR ??= mkdtempSync(path.join(tmpdir(), "bench-gc-"));

/** What `gc-stats.mjs` answers for one window (bytes, µs, counts). */
export interface GcWindow {
  ms: number;
  allocatedBytes: number;
  promotedBytes: number;
  young: number;
  youngP99Us: number;
  youngMaxUs: number;
  full: number;
  fullP99Us: number;
  fullMaxUs: number;
  gcUs: number;
  usedAtEndBytes: number;
}

/** One window's figures per request of the run it spanned. */
export interface GcPerRequest {
  /** Bytes allocated per request (KiB). */
  allocKiB: number;
  /** Bytes promoted to the old generation per request. */
  promotedBytes: number;
  /** Young collections per 10 000 requests and their p99 pause (ms). */
  youngPer10k: number;
  youngP99Ms: number;
  /** Full (mark-compact) collections per 10 000 requests and their p99 pause (ms). */
  fullPer10k: number;
  fullP99Ms: number;
  /** Collector pause time per request (µs), every kind. */
  gcUsPerReq: number;
}

/** `node` flags that load the preload ([] when BENCH_GC=0). */
export function gcNodeArgs(): string[] {
  return ENABLED ? ["--import", PRELOAD] : [];
}

const socketOf = (pid: number): string => path.join(process.env.BENCH_GC_SOCKET_DIR ?? "", `gc-${pid}.sock`);

/**
 * True when, of `pids` (a process tree, root first), only the root loaded the preload: one Node
 * process (tsx's esbuild helper does not count), so its window is the server's whole collector.
 * A `workers` gateway's primary is not where its requests are served.
 */
export function gcSingleProcess(pids: readonly number[]): boolean {
  return ENABLED && pids.slice(1).every((p) => !existsSync(socketOf(p)));
}

function ask(pid: number, what: "start" | "read"): Promise<GcWindow | null> {
  const socketPath = socketOf(pid);
  return new Promise((resolve) => {
    const req = http.get({ socketPath, path: `/${what}`, timeout: 5000 }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (c: string) => (body += c));
      res.on("end", () => {
        try {
          resolve(what === "read" ? (JSON.parse(body) as GcWindow) : null);
        } catch {
          resolve(null);
        }
      });
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(null));
  });
}

/** Opens a window in process `pid` (no-op when the preload is off or the process lacks it). */
export async function gcStart(pid: number): Promise<void> {
  if (ENABLED) await ask(pid, "start");
}

/** Closes `pid`'s window; per request of `requests`, or undefined when there is none. */
export async function gcRead(pid: number, requests: number): Promise<GcPerRequest | undefined> {
  if (!ENABLED) return undefined;
  const w = await ask(pid, "read");
  if (w === null || requests <= 0) return undefined;
  return {
    allocKiB: w.allocatedBytes / requests / 1024,
    promotedBytes: w.promotedBytes / requests,
    youngPer10k: (w.young * 1e4) / requests,
    youngP99Ms: w.youngP99Us / 1000,
    fullPer10k: (w.full * 1e4) / requests,
    fullP99Ms: w.fullP99Us / 1000,
    gcUsPerReq: w.gcUs / requests,
  };
}
