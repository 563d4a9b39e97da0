/**
 * `npm run bench:tls`: what TLS and HTTP/2 cost per request, in one interleaved run.
 *
 *   p    the gateway, plain HTTP/1.1                      (wrk)
 *   t1   the gateway, TLS, HTTP/1.1                       (wrk over https)
 *   t2   the gateway, TLS, HTTP/2                         (h2load: 8 connections x 8 streams)
 *   r1   a bare Node TLS proxy on undici, HTTP/1.1        (wrk over https)
 *   r2   a bare Node TLS proxy on undici, HTTP/2          (h2load, same shape)
 *
 * Memory store, a static token, `GET /v1/user`. Servers on core 0, the load generator on core 1.
 * Environment: BENCH_ROUNDS (3), BENCH_SECONDS (5), BENCH_CONNECTIONS (64, wrk cells).
 * Needs `wrk` and `h2load` (Debian `wrk`, `nghttp2-client`) and `openssl`.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createPki } from "../helpers/tls.js";
import { cpuMicros, hasCommand, LOAD_CORE, pinned, sleep } from "./procs.js";
import { startBareTlsProxy, startGateway, startUpstream, writeWarmTokens, type Target } from "./targets.js";
import { ensureWrk, runWrk, staticTokenScript } from "./wrk.js";

const ROUNDS = Math.min(Math.max(Number(process.env.BENCH_ROUNDS ?? 3) || 3, 1), 20);
const SECONDS = Math.min(Math.max(Number(process.env.BENCH_SECONDS ?? 5) || 5, 1), 60);
const CONNECTIONS = Math.min(Math.max(Number(process.env.BENCH_CONNECTIONS ?? 64) || 64, 1), 512);
const TOKEN = "bench-tls-token";
const PATH = "/v1/user";
const OUT = fileURLToPath(new URL("./runs/last-run-tls.md", import.meta.url));

interface Cell {
  id: string;
  label: string;
  target: Target;
  tool: "wrk" | "h2load";
  rps: number[];
  cpu: number[];
}

/** h2load for `seconds`: requests per second and requests done (2xx only). */
async function runH2load(url: string, seconds: number): Promise<{ rps: number; requests: number }> {
  const args = ["-c", "8", "-m", "8", "-D", String(seconds), "-H", `authorization: Bearer ${TOKEN}`, url];
  const [cmd, a] = pinned(LOAD_CORE, "h2load", args);
  const proc = spawn(cmd, a, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  proc.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
  const kill = setTimeout(() => proc.kill("SIGKILL"), (seconds + 30) * 1000);
  await once(proc, "exit");
  clearTimeout(kill);
  const ok = Number(/status codes: (\d+) 2xx/.exec(out)?.[1] ?? 0);
  const took = /finished in ([\d.]+)(ms|s)/.exec(out);
  const s = took === null ? seconds : Number(took[1]) / (took[2] === "ms" ? 1000 : 1);
  return { rps: ok / s, requests: ok };
}

const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)] ?? 0;
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

async function main(): Promise<void> {
  if (ensureWrk() !== null || !hasCommand("h2load")) {
    console.error("bench:tls needs wrk and h2load (apt-get install wrk nghttp2-client)");
    process.exit(1);
  }
  const dir = mkdtempSync(path.join(tmpdir(), "bench-tls-"));
  const pki = createPki();
  const started: Target[] = [];
  try {
    const upstream = await startUpstream();
    started.push(upstream);
    const tokensFile = writeWarmTokens(dir, TOKEN);
    const tls = { certFile: pki.serverCertFile, keyFile: pki.serverKeyFile };
    const plain = await startGateway("p-plain", dir, upstream.url, { tokensFile });
    const tlsH1 = await startGateway("t1-tls-h1", dir, upstream.url, {
      tokensFile,
      tls: { ...tls, http2: false },
    });
    const tlsH2 = await startGateway("t2-tls-h2", dir, upstream.url, { tokensFile, tls });
    const r1 = await startBareTlsProxy(upstream.url, "h1", tls.certFile, tls.keyFile);
    const r2 = await startBareTlsProxy(upstream.url, "h2", tls.certFile, tls.keyFile);
    started.push(plain, tlsH1, tlsH2, r1, r2);
    const cells: Cell[] = [
      { id: "p", label: "gateway, plain HTTP/1.1", target: plain, tool: "wrk", rps: [], cpu: [] },
      { id: "t1", label: "gateway, TLS HTTP/1.1", target: tlsH1, tool: "wrk", rps: [], cpu: [] },
      {
        id: "t2",
        label: "gateway, TLS HTTP/2 (8 conn x 8 streams)",
        target: tlsH2,
        tool: "h2load",
        rps: [],
        cpu: [],
      },
      { id: "r1", label: "bare Node TLS proxy, HTTP/1.1", target: r1, tool: "wrk", rps: [], cpu: [] },
      {
        id: "r2",
        label: "bare Node TLS proxy, HTTP/2 (8 x 8)",
        target: r2,
        tool: "h2load",
        rps: [],
        cpu: [],
      },
    ];
    const script = staticTokenScript(dir, TOKEN);
    const measure = async (cell: Cell, seconds: number) => {
      const c0 = cpuMicros(cell.target.child.pid);
      const r =
        cell.tool === "wrk"
          ? await runWrk(cell.target.url + PATH, { seconds, connections: CONNECTIONS, script })
          : await runH2load(cell.target.url + PATH, seconds);
      const c1 = cpuMicros(cell.target.child.pid);
      return { rps: r.rps, cpu: (c1 - c0) / Math.max(r.requests, 1) };
    };
    for (const cell of cells) await measure(cell, 2); // warm-up: JIT, sessions, token cache
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < cells.length; i++) {
        const cell = cells[(i + round) % cells.length]!;
        const s = await measure(cell, SECONDS);
        cell.rps.push(s.rps);
        cell.cpu.push(s.cpu);
        console.log(
          `  round ${round + 1}/${ROUNDS} ${cell.id.padEnd(2)} ${fmt(s.rps).padStart(7)} req/s  ${fmt(s.cpu)} µs/req`,
        );
        await sleep(300);
      }
    }
    const cpu = (id: string) => median(cells.find((c) => c.id === id)!.cpu);
    const lines = [
      `### TLS and HTTP/2 benchmark ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC`,
      "",
      `\`npm run bench:tls\` (BENCH_ROUNDS=${ROUNDS}, BENCH_SECONDS=${SECONDS}); wrk 1 thread ${CONNECTIONS} connections, ` +
        "h2load 8 connections x 8 streams; `GET /v1/user`; medians over interleaved rounds.",
      "",
      "| cell | req/s | CPU µs/req |",
      "| --- | ---: | ---: |",
      ...cells.map((c) => `| ${c.id}. ${c.label} | ${fmt(median(c.rps))} | ${fmt(median(c.cpu))} |`),
      "",
      `Cost per request: TLS on HTTP/1.1 ${fmt(cpu("t1") - cpu("p"))} µs (gateway t1 − p); ` +
        `HTTP/2 against TLS HTTP/1.1 ${fmt(cpu("t2") - cpu("t1"))} µs (t2 − t1); ` +
        `the bare proxies: h2 − h1 ${fmt(cpu("r2") - cpu("r1"))} µs.`,
      "",
    ];
    writeFileSync(OUT, lines.join("\n"));
    console.log(lines.join("\n"));
  } finally {
    for (const t of started) await t.child.stop();
    pki.remove();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
