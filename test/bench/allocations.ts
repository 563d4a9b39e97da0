/**
 * Bytes allocated per request, by allocating function: the gateway (built dist/, cell d: Redis
 * store, warm static token) under load from wrk, with V8's sampling heap profiler switched on over
 * the inspector protocol for the measured seconds, counting objects the collector has already freed
 * too (`includeObjectsCollectedByMinorGC`/`MajorGC`), so the figures are allocation, not retention.
 * What the young-generation collections of the open-loop tail are made of (README, Performance).
 *
 * Usage: `node --import tsx test/bench/allocations.ts [seconds] [top] [survivors]` (default 5 s,
 * top 25). `survivors` leaves out what young collections freed: what is left is what survived one
 * (promoted to the old generation, the bytes behind the open-loop tail's pauses), plus what is live
 * in the young generation when sampling stops (a young collection, `gc({ type: "minor" })` under
 * `--expose-gc`, runs first, so the garbage allocated since the last one does not count). A fifth argument drives the gateway at that fixed rate (req/s) with the
 * open-loop generator instead of wrk at saturation, where 64 requests are always in flight.
 * `ALLOC_STORE=memory` profiles cell c (memory store) instead of d. `ALLOC_NODE_ARGS="<flags>"` adds
 * `node` flags to the gateway: `--no-turbo-inlining` charges each allocation to the function that
 * makes it (the profiler names only the outermost function of an optimised frame, so an inlined
 * callee's objects are otherwise its caller's).
 * Needs `npm run build`, wrk and nginx (else the Node upstream).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import WebSocket from "ws";
import { freePorts } from "../helpers/child-gateway.js";
import { hasNginx, startNginxUpstream } from "./nginx-upstream.js";
import { runOpenLoop } from "./open-loop-runs.js";
import { pinSelf } from "./procs.js";
import { get, startGateway, startRedis, startUpstream, writeWarmTokens } from "./targets.js";
import { runWrk, staticTokenScript } from "./wrk.js";

const SECONDS = Number(process.argv[2] ?? 5);
const TOP = Number(process.argv[3] ?? 25);
const SURVIVORS = process.argv[4] === "survivors";
/** A fixed offered rate (req/s, the open-loop generator) instead of wrk's saturation; 0: wrk. */
const RATE = Number(process.argv[5] ?? 0);

/** A node of V8's sampling heap profile. */
interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** Minimal Chrome DevTools Protocol client over the inspector's WebSocket. */
async function inspector(port: number): Promise<(method: string, params?: object) => Promise<unknown>> {
  const list = JSON.parse((await get(`http://127.0.0.1:${port}/json/list`)).body) as {
    webSocketDebuggerUrl: string;
  }[];
  const ws = new WebSocket(list[0]!.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  let next = 0;
  const waiting = new Map<number, (v: unknown) => void>();
  ws.on("message", (data) => {
    const msg = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: unknown };
    if (msg.id !== undefined) waiting.get(msg.id)?.(msg.error ?? msg.result);
  });
  return (method, params = {}) =>
    new Promise((resolve) => {
      const id = ++next;
      waiting.set(id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
}

pinSelf();
const dir = mkdtempSync(path.join(tmpdir(), "gateway-alloc-"));
const upstream = hasNginx ? await startNginxUpstream(dir) : await startUpstream();
const redis = await startRedis(dir);
const [inspectPort] = (await freePorts(1)) as [number];
const tokensFile = writeWarmTokens(dir, "tok");
const script = staticTokenScript(dir, "tok");
const gw = await startGateway("alloc", dir, upstream.url, {
  tokensFile,
  ...(process.env.ALLOC_STORE === "memory" ? {} : { redisUrl: redis.url, keyPrefix: "ba" }),
  nodeArgs: [
    `--inspect=127.0.0.1:${inspectPort}`,
    ...(SURVIVORS ? ["--expose-gc"] : []),
    ...(process.env.ALLOC_NODE_ARGS ?? "").split(" ").filter((a) => a !== ""),
  ],
});
try {
  const url = `${gw.url}/v1/user`;
  await runWrk(url, { seconds: 4, connections: 64, script });
  const cdp = await inspector(inspectPort);
  await cdp("HeapProfiler.enable");
  await cdp("HeapProfiler.startSampling", {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: !SURVIVORS,
  });
  const w =
    RATE > 0
      ? await runOpenLoop(url, RATE, SECONDS, 64, "tok").then((r) => ({
          requests: r.answered,
          rps: r.achieved,
        }))
      : await runWrk(url, { seconds: SECONDS, connections: 64, script });
  // A young collection first, so the young generation's dead objects leave the survivors' profile
  // (without it, up to a semi-space of garbage allocated since the last one would count).
  if (SURVIVORS) await cdp("Runtime.evaluate", { expression: "gc({ type: 'minor' })" });
  const { profile } = (await cdp("HeapProfiler.stopSampling")) as { profile: { head: ProfileNode } };
  const byFrame = new Map<string, number>();
  let total = 0;
  const walk = (n: ProfileNode): void => {
    const f = n.callFrame;
    const file = f.url
      .replace(/^file:\/\//, "")
      .replace(/^.*\/node_modules\//, "")
      .replace(/^.*\/dist\//, "");
    const key = `${f.functionName || "(anonymous)"} ${file === "" ? "(native)" : `${file}:${f.lineNumber + 1}`}`;
    byFrame.set(key, (byFrame.get(key) ?? 0) + n.selfSize);
    total += n.selfSize;
    for (const c of n.children) walk(c);
  };
  walk(profile.head);
  const perReq = (b: number) => (b / w.requests / 1024).toFixed(2);
  console.log(
    `${w.requests} requests (${w.rps.toFixed(0)} req/s) under the sampling profiler: ` +
      `${perReq(total)} KiB ${SURVIVORS ? "surviving a young collection" : "allocated"} per request`,
  );
  console.log("| allocating frame | KiB/request | share |\n| --- | ---: | ---: |");
  for (const [k, b] of [...byFrame].sort((a, z) => z[1] - a[1]).slice(0, TOP)) {
    console.log(`| \`${k}\` | ${perReq(b)} | ${((b / total) * 100).toFixed(1)} % |`);
  }
} finally {
  await Promise.all([gw.child.stop(), upstream.child.stop(), redis.child.stop()]);
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
