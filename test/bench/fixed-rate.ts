/**
 * Paired per-request figures of gateways at one fixed offered rate, for A/B on a busy machine:
 * each variant is started in turn (Redis store, warm static token, nginx or Node
 * upstream), warmed for 3 s, then driven by the open-loop generator; printed per variant and round:
 * CPU µs, write and read syscalls (`/proc/<pid>/io`), KiB allocated and bytes promoted (gc-stats.mjs)
 * per request, latency, then RSS and V8's new/old space sizes (admin `/metrics`).
 *
 * Usage: `node --import tsx test/bench/fixed-rate.ts <variant,...> [rate req/s] [seconds] [rounds]`
 * (1000, 5, 2). A variant is a build directory holding `gateway/main.js` (e.g. one compiled with
 * `npx tsc -p tsconfig.build.json --outDir .tmp/x` plus the Lua scripts copied beside), or an
 * absolute path to a `node` binary that runs `dist/` (the runtime comparison), or `flags:<node flags>`
 * (`dist/` with extra `node` flags, e.g. `flags:--single-threaded-gc`).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gcRead, gcStart } from "./gc-window.js";
import { hasNginx, startNginxUpstream } from "./nginx-upstream.js";
import { runOpenLoop } from "./open-loop-runs.js";
import { cpuMicros, pinSelf, rssBytes } from "./procs.js";
import { metricSum, startGateway, startRedis, startUpstream, writeWarmTokens } from "./targets.js";

const variants = (process.argv[2] ?? "").split(",").filter((v) => v !== "");
const RATE = Number(process.argv[3] ?? 1000);
const SECONDS = Number(process.argv[4] ?? 5);
const ROUNDS = Number(process.argv[5] ?? 2);
if (variants.length === 0) {
  console.error("usage: fixed-rate.ts <build dir or node binary,...> [rate] [seconds] [rounds]");
  process.exit(2);
}

/** Write and read syscalls of `pid` so far (every thread). */
function syscalls(pid: number): { w: number; r: number } {
  const t = readFileSync(`/proc/${pid}/io`, "utf8");
  return { w: Number(/syscw: (\d+)/.exec(t)?.[1] ?? 0), r: Number(/syscr: (\d+)/.exec(t)?.[1] ?? 0) };
}

pinSelf();
const dir = mkdtempSync(path.join(tmpdir(), "gateway-fixed-rate-"));
const upstream = hasNginx ? await startNginxUpstream(dir) : await startUpstream();
const redis = await startRedis(dir);
const tokensFile = writeWarmTokens(dir, "tok");
const name = (v: string) => v.replace(/[^A-Za-z0-9]/g, "");
try {
  for (let round = 1; round <= ROUNDS; round++)
    for (const v of variants) {
      const gw = await startGateway(`fr-${name(v)}`, dir, upstream.url, {
        tokensFile,
        redisUrl: redis.url,
        keyPrefix: `fr${name(v)}`,
        ...(v.startsWith("flags:")
          ? { nodeArgs: v.slice(6).split(" ") }
          : v.endsWith("/node")
            ? { node: v }
            : { main: path.resolve(v, "gateway/main.js") }),
      });
      const url = `${gw.url}/v1/user`;
      await runOpenLoop(url, RATE, 3, 64, "tok");
      const s0 = syscalls(gw.child.pid);
      const c0 = cpuMicros(gw.child.pid);
      await gcStart(gw.child.pid);
      const r = await runOpenLoop(url, RATE, SECONDS, 64, "tok");
      const gc = await gcRead(gw.child.pid, r.answered);
      const cpu = (cpuMicros(gw.child.pid) - c0) / r.answered;
      const s1 = syscalls(gw.child.pid);
      const page = await gw.metrics();
      const mb = (x: number) => (x / 2 ** 20).toFixed(0);
      const space = (s: string) => mb(metricSum(page, "nodejs_heap_space_size_total_bytes", `space="${s}"`));
      console.log(
        `round ${round} ${v}: CPU ${cpu.toFixed(0)} µs/req, write syscalls ${((s1.w - s0.w) / r.answered).toFixed(3)}/req, ` +
          `read ${((s1.r - s0.r) / r.answered).toFixed(3)}/req, ${gc?.allocKiB.toFixed(2) ?? "–"} KiB allocated/req, ` +
          `${gc?.promotedBytes.toFixed(0) ?? "–"} B promoted/req, young GCs ${gc?.youngPer10k.toFixed(1) ?? "–"}/10k ` +
          `(p99 ${gc?.youngP99Ms.toFixed(2) ?? "–"} ms), p50 ${r.p50Ms.toFixed(2)} p99 ${r.p99Ms.toFixed(2)} ms; ` +
          `RSS ${mb(rssBytes(gw.child.pid))} MB, new space ${space("new")} MB, old ${space("old")} MB`,
      );
      await gw.child.stop();
    }
} finally {
  await Promise.all([upstream.child.stop(), redis.child.stop()]);
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
