/**
 * Bench-only preload (`node --import <this file> …`, plain JavaScript so any Node binary loads it
 * without tsx): what the process's garbage collector did over a window the harness opens and
 * closes, per request of the load generator that ran meanwhile. The product never
 * loads it; only servers the bench starts do, and only when `BENCH_GC_SOCKET_DIR` is set.
 *
 * It answers on a Unix socket `<BENCH_GC_SOCKET_DIR>/gc-<pid>.sock`:
 *   GET /start  opens a window (a fresh `v8.GCProfiler`, the heap's used bytes now)
 *   GET /read   closes it and answers JSON {@link summary}; the next /start opens another
 *
 * From the profiler's per-collection heap statistics (before and after each pause):
 *   allocated  bytes the program allocated in the window: the heap's growth between collections
 *              (each collection's "before" minus the previous one's "after"), plus the growth since
 *              the last one
 *   promoted   bytes a young collection moved into the old generation (old-generation spaces' used
 *              bytes after minus before, summed over young collections): what survived while a
 *              request was in flight, and what a full collection must later mark
 *   pauses     each collection's main-thread time (`cost`, µs), young (Scavenge, minor mark-sweep)
 *              and full (mark-sweep-compact) apart
 * The socket's own two requests per window allocate a few KB; against 10^4-10^5 requests that is
 * below the third digit.
 */
import http from "node:http";
import { rmSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import v8 from "node:v8";

const dir = process.env.BENCH_GC_SOCKET_DIR;
const YOUNG = new Set(["Scavenge", "MinorMarkSweep", "MinorMarkCompact"]);
const FULL = new Set(["MarkSweepCompact"]);
/** Spaces of the young generation; every other space but read-only is the old generation's. */
const YOUNG_SPACES = new Set(["new_space", "new_large_object_space", "read_only_space"]);

/** @param {{ spaceName: string, spaceUsedSize: number }[]} spaces */
function oldUsed(spaces) {
  let sum = 0;
  for (const s of spaces) if (!YOUNG_SPACES.has(s.spaceName)) sum += s.spaceUsedSize;
  return sum;
}

/** @param {number[]} xs */
function p99(xs) {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(s.length * 0.99) - 1)];
}

/**
 * @param {ReturnType<v8.GCProfiler["stop"]>} data
 * @param {number} usedAtStart - heap used bytes when the window opened
 * @param {number} usedAtEnd - heap used bytes when it closed
 */
function summary(data, usedAtStart, usedAtEnd) {
  let allocated = 0;
  let promoted = 0;
  let prevAfter = usedAtStart;
  const young = [];
  const full = [];
  let otherUs = 0;
  for (const s of data?.statistics ?? []) {
    const before = s.beforeGC.heapStatistics.usedHeapSize;
    const after = s.afterGC.heapStatistics.usedHeapSize;
    allocated += Math.max(0, before - prevAfter);
    prevAfter = after;
    if (YOUNG.has(s.gcType)) {
      young.push(s.cost);
      promoted += Math.max(
        0,
        oldUsed(s.afterGC.heapSpaceStatistics) - oldUsed(s.beforeGC.heapSpaceStatistics),
      );
    } else if (FULL.has(s.gcType)) full.push(s.cost);
    else otherUs += s.cost;
  }
  allocated += Math.max(0, usedAtEnd - prevAfter);
  const sum = (xs) => xs.reduce((a, x) => a + x, 0);
  return {
    ms: data === undefined ? 0 : data.endTime - data.startTime,
    allocatedBytes: allocated,
    promotedBytes: promoted,
    young: young.length,
    youngP99Us: p99(young),
    youngMaxUs: young.length === 0 ? 0 : Math.max(...young),
    full: full.length,
    fullP99Us: p99(full),
    fullMaxUs: full.length === 0 ? 0 : Math.max(...full),
    gcUs: sum(young) + sum(full) + otherUs,
    usedAtEndBytes: usedAtEnd,
  };
}

if (dir !== undefined && dir !== "") {
  const socket = path.join(dir, `gc-${process.pid}.sock`);
  rmSync(socket, { force: true });
  /** @type {v8.GCProfiler | undefined} */
  let profiler;
  let usedAtStart = 0;
  const server = http.createServer((req, res) => {
    let body = "{}";
    if (req.url === "/start") {
      profiler?.stop();
      usedAtStart = v8.getHeapStatistics().used_heap_size;
      profiler = new v8.GCProfiler();
      profiler.start();
    } else if (req.url === "/read") {
      const data = profiler?.stop();
      profiler = undefined;
      body = JSON.stringify(summary(data, usedAtStart, v8.getHeapStatistics().used_heap_size));
    } else res.statusCode = 404;
    res.setHeader("content-type", "application/json");
    res.end(body);
  });
  server.listen(socket);
  // Neither the socket nor the server may keep a draining process alive.
  server.unref();
  process.once("exit", () => rmSync(socket, { force: true }));
}
