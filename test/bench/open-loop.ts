/**
 * An open-loop (constant-rate) load generator, the measurement of issue 17 item 3: requests are
 * sent on a fixed schedule whatever the server's answers, and each latency is counted from the
 * moment its request was due, not from when a connection was free, so a stalled server shows its
 * real cost to every request it delayed (the "coordinated omission" correction of wrk2, after Gil
 * Tene, "How NOT to Measure Latency", 2015). wrk is closed-loop: it measures at saturation only.
 *
 * Usage: `open-loop.ts <url> <rate req/s> <seconds> <connections> [bearer token]`; prints one JSON
 * line: offered and achieved rates (req/s), latency percentiles (ms), errors. The first second is a
 * warm-up at the same rate and is not counted.
 */
import { writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { Pool } from "undici";

const url = new URL(process.argv[2]!);
const rate = Number(process.argv[3]);
const seconds = Number(process.argv[4]);
const connections = Number(process.argv[5]);
const token = process.argv[6];
const WARMUP_S = 1;
/** Requests still unanswered this long after the schedule ends count as errors (ms). */
const DRAIN_MS = 5000;

const pool = new Pool(url.origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
const path = url.pathname + url.search;
const total = Math.round(rate * (WARMUP_S + seconds));
const skip = Math.round(rate * WARMUP_S);
const latencies = new Float64Array(total - skip);
/** OPEN_LOOP_DUMP=<file>: each counted request's due time (ms after the start) and latency (ms). */
const dump = process.env.OPEN_LOOP_DUMP;
const dueAt = dump === undefined ? null : new Float64Array(total - skip);
const intervalMs = 1000 / rate;
let done = 0;
let counted = 0;
let errors = 0;
let non2xx = 0;

function fire(i: number, dueMs: number): void {
  pool.request({ path, method: "GET", headers }).then(
    async (res) => {
      await res.body.dump();
      if (res.statusCode < 200 || res.statusCode > 299) non2xx++;
      finish(i, dueMs);
    },
    () => {
      errors++;
      done++;
    },
  );
}

function finish(i: number, dueMs: number): void {
  done++;
  if (i < skip) return;
  if (dueAt !== null) dueAt[counted] = dueMs - start;
  latencies[counted++] = performance.now() - dueMs;
}

const start = performance.now() + 10;
let next = 0;
await new Promise<void>((resolve) => {
  const tick = (): void => {
    const now = performance.now();
    while (next < total && start + next * intervalMs <= now) {
      fire(next, start + next * intervalMs);
      next++;
    }
    if (next < total) setTimeout(tick, Math.max(0, Math.min(1, start + next * intervalMs - now)));
    else resolve();
  };
  tick();
});
const endMs = start + total * intervalMs;
const deadline = performance.now() + DRAIN_MS;
while (done < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
if (dump !== undefined && dueAt !== null) {
  const rows: string[] = [];
  for (let k = 0; k < counted; k++) rows.push(`${dueAt[k]!.toFixed(2)} ${latencies[k]!.toFixed(2)}`);
  writeFileSync(dump, rows.join("\n") + "\n");
}
const measured = latencies.subarray(0, counted).sort();
const pct = (p: number) => (counted === 0 ? NaN : measured[Math.min(counted - 1, Math.floor(p * counted))]!);
const achieved = (counted - non2xx) / seconds;
console.log(
  JSON.stringify({
    offered: rate,
    achieved,
    requests: counted,
    answered: done,
    p50Ms: pct(0.5),
    p90Ms: pct(0.9),
    p99Ms: pct(0.99),
    p999Ms: pct(0.999),
    maxMs: counted === 0 ? NaN : measured[counted - 1],
    errors: errors + (total - done),
    non2xx,
    lateMs: Math.max(0, performance.now() - endMs),
  }),
);
await pool.destroy();
process.exit(0);
