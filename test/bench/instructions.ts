/**
 * Instructions per request under `valgrind --tool=callgrind`, which counts the same for the same
 * work whatever else the machine runs (the wall-clock bench cannot, on a shared machine). Usage:
 *
 *   node --import tsx test/bench/instructions.ts [variants] [requests]
 *
 * variants: comma list of `off` (no tracing), a `sample_ratio` (tracing to a collector stand-in),
 * `jwt` (a warm RS256 JWT access token from oidc-provider, `auth.jwt` beside the static file) or
 * `long` (a static opaque token as long as that JWT), `quota` (as `off`, the `read` class with a
 * calendar window beside its sliding one), `two` (a second sliding window instead), `budget` (a
 * budget shared by an organisation beside the class's window, SPEC §22, the token carrying the
 * claim), `redis`, `redis-quota`, `redis-two` and `redis-budget` (the same on the Redis store at
 * `BENCH_REDIS_URL`), `quota-ops` and `redis-quota-ops` (as `quota`, with SPEC §21's top callers
 * and a webhook of two thresholds: the per-call cost of usage operations, paired with `quota`,
 * which keeps neither), default
 * `off,0,0.01,1`; requests: measured requests per variant (4000). Each variant is a gateway
 * from dist/ (memory store, one static token) under callgrind with `--instr-atstart=no` and
 * `node --single-threaded` (compilation and GC on the counted thread): the same number of requests
 * warms it up, then instrumentation is switched on for the measured requests (16 keep-alive
 * clients) and the counts are dumped. Compiler and GC frames are reported apart: compilation still
 * happens in the window and varies from run to run. Needs `npm run build` and valgrind.
 * `BENCH_NODE=<node binary>` runs the gateway on another runtime (the runtime comparison).
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { stringify } from "yaml";
import { freePorts } from "../helpers/child-gateway.js";
import { AUDIENCE, signingKey, startJwtIdp } from "../helpers/jwt-idp.js";
import { agent, request } from "../helpers/http.js";
import { waitForPort, type Child } from "./procs.js";
import {
  GATEWAY_MAIN,
  gatewayConfig,
  type GatewayVariant,
  longOpaqueToken,
  startCollectorSink,
  startUpstream,
  writeWarmTokens,
} from "./targets.js";

const VARIANTS = (process.argv[2] ?? "off,0,0.01,1").split(",");

/** The Redis of the `redis` variants. */
function redisUrl(): string {
  const url = process.env.BENCH_REDIS_URL;
  if (url === undefined)
    throw new Error("the redis variants need BENCH_REDIS_URL (redis://127.0.0.1:<port>)");
  return url;
}
const REQUESTS = Number(process.argv[3] ?? 4000);
const TOKEN = "bench-warm-token";
const COMPILER = /compiler::|Compiler|Maglev|maglev|Deoptimiz/;
const GC = /Heap::|Scavenger|MarkCompact|Sweeper|Evacuat|GCTracer|heap::|MemoryAllocator|Marking/;

async function load(url: string, n: number, token: string): Promise<void> {
  const keepAlive = agent();
  let next = 0;
  const client = async (): Promise<void> => {
    while (next < n) {
      next++;
      const r = await request(`${url}/v1/user`, {
        headers: { authorization: `Bearer ${token}` },
        agent: keepAlive,
      });
      if (r.status !== 200) throw new Error(`answered ${r.status}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, client));
  keepAlive.destroy();
}

/** Instructions of a callgrind dump: compiler, GC and everything else. */
function split(file: string): { compiler: number; gc: number; other: number } {
  const out = execFileSync("callgrind_annotate", ["--threshold=100", file], {
    encoding: "utf8",
    maxBuffer: 1 << 28,
  });
  const sums = { compiler: 0, gc: 0, other: 0 };
  let on = false;
  for (const line of out.split("\n")) {
    if (line.includes("file:function")) on = true;
    const m = on ? /^\s*([\d,]+)\s/.exec(line) : null;
    if (m === null) continue;
    const n = Number(m[1]!.replaceAll(",", ""));
    if (COMPILER.test(line)) sums.compiler += n;
    else if (GC.test(line)) sums.gc += n;
    else sums.other += n;
  }
  return sums;
}

const dir = mkdtempSync(path.join(tmpdir(), "gateway-instructions-"));
const upstream = await startUpstream();
const sink = await startCollectorSink();
// The JWT variants' identity provider, and an opaque token as long as its JWT.
const idp = VARIANTS.some((v) => v === "jwt" || v === "long")
  ? await startJwtIdp([await signingKey("bench-rs256", "RS256")], 24 * 3600) // outlives every variant
  : undefined;
const jwt = idp === undefined ? "" : await idp.issueJwt("read");
// Only with a JWT to match: an empty token would make the tokens file invalid.
const longToken = idp === undefined ? undefined : longOpaqueToken(jwt.length);

/** What a variant sets in the bench gateway's configuration (beside its ports and tokens file). */
function variantConfig(variant: string): GatewayVariant {
  if (variant === "jwt") return { jwt: { issuer: idp!.issuer, audience: AUDIENCE } };
  if (variant === "off" || variant === "long") return {};
  const store = /^(redis)?-?(quota|two|budget)?(-ops)?$/.exec(variant);
  if (store === null || (store[1] === undefined && store[2] === undefined))
    return { tracing: { endpoint: sink.endpoint, sampleRatio: Number(variant) } };
  if (store[2] === "budget") {
    return {
      orgBudget: true,
      tokensFile: writeWarmTokens(dir, TOKEN, longToken, "bench-org"),
      ...(store[1] === undefined ? {} : { redisUrl: redisUrl(), keyPrefix: `instr-${variant}` }),
    };
  }
  if (store[3] !== undefined) writeFileSync(path.join(dir, "webhook-secret"), "bench-secret\n");
  return {
    ...(store[3] === undefined ? {} : { usageOps: { secretFile: path.join(dir, "webhook-secret") } }),
    ...(store[2] === undefined ? {} : { secondWindow: store[2] === "quota" ? "calendar" : "sliding" }),
    ...(store[1] === undefined ? {} : { redisUrl: redisUrl(), keyPrefix: `instr-${variant}` }),
  };
}

try {
  const tokensFile = writeWarmTokens(dir, TOKEN, longToken);
  for (const variant of VARIANTS) {
    const [apiPort, adminPort] = (await freePorts(2)) as [number, number];
    const extra = variantConfig(variant);
    const token = variant === "jwt" ? jwt : variant === "long" ? longToken! : TOKEN;
    const file = path.join(dir, `${variant}.yaml`);
    writeFileSync(
      file,
      stringify(gatewayConfig(upstream.url, { apiPort, adminPort }, { tokensFile, ...extra })),
    );
    const out = path.join(dir, `callgrind-${variant}.out`);
    const args = ["--tool=callgrind", "--instr-atstart=no", `--callgrind-out-file=${out}`];
    const proc = spawn(
      "valgrind",
      [
        ...args,
        process.env.BENCH_NODE ?? process.execPath,
        "--single-threaded",
        GATEWAY_MAIN,
        "start",
        "--config",
        file,
      ],
      {
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let stderr = "";
    proc.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => proc.once("exit", resolve));
    const child = {
      name: `gateway ${variant}`,
      proc,
      pid: proc.pid!,
      stderr: () => stderr,
      exited,
    } as unknown as Child;
    await waitForPort(child, adminPort, 180_000);
    const url = `http://127.0.0.1:${apiPort}`;
    await load(url, REQUESTS, token);
    execFileSync("callgrind_control", ["-i", "on", String(proc.pid)], { stdio: "ignore" });
    await load(url, REQUESTS, token);
    execFileSync("callgrind_control", ["-d", String(proc.pid)], { stdio: "ignore" });
    proc.kill("SIGTERM");
    await exited;
    const dump = readdirSync(dir).find((f) => f.startsWith(`callgrind-${variant}.out.`));
    if (dump === undefined) throw new Error(`${variant}: no dump`);
    const s = split(path.join(dir, dump));
    const k = (x: number) => `${Math.round(x / REQUESTS / 1000)}k`;
    const what = token === TOKEN ? "" : ` (${token.length}-character token)`;
    console.log(
      `${variant.padEnd(5)}${what} per request: ${k(s.other)} instructions (compiler ${k(s.compiler)}, GC ${k(s.gc)} apart)`,
    );
  }
} finally {
  await Promise.all([upstream.child.stop(), sink.child.stop(), idp?.stop()]);
  rmSync(dir, { recursive: true, force: true });
}
