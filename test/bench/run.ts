/**
 * `npm run bench`: the gateway against a bare http-proxy-3 server, measured with wrk on
 * loopback, interleaved over rounds, medians with min-max. Cells:
 *
 *   a   the upstream alone                      b2  a bare proxy on undici (dispatch API)
 *   b   a bare http-proxy-3 proxy (keep-alive)  b3  a bare proxy on undici (stream API)
 *   c   the gateway, memory store               d   the gateway, Redis store
 *   e   the gateway, Redis, IETF headers and a shadow class on the benched path
 *   f   the gateway, Redis store, plans and 1000 consumers (the caller found among them); paired
 *       against d round by round (within 3 %)
 *   g   the gateway, Redis store, the one identity far over its limit (500 calls per second admitted,
 *       wrk offers ~20x that): Redis calls per rejected request (~0), against c
 *   w2  the gateway, Redis store, `workers: 2` on the same pinned core as d: what the primary (the
 *       line relay, node:cluster's connection hand-off) costs per request; CPU is the process tree's
 *   dj  the gateway, Redis, a warm JWT access token (auth.jwt beside introspection), paired with d
 *   dl  d with a warm opaque token as long as dj's JWT: what the token's length alone costs, so dj/dl
 *       is the JWT path's own cost
 *   dm  d with V8's concurrent marking on (`node --concurrent-marking`), which the gateway turns
 *       off on Node 20 (`gateway/cli/gc-tuning.ts`): what that setting does, paired with
 *       d round by round and driven open-loop (on Node 22 and later, the same as d)
 *   t1  d with tracing, sample_ratio 0.01      t100  d with tracing, sample_ratio 1.0
 *       (spans to an OTLP/HTTP collector stand-in on the load core; paired per round with d)
 *   dd  d's configuration asked on its decision listener (SPEC §23) instead of proxied: wrk GETs
 *       `/decide/v1/user` (Envoy's ext_authz convention), the gateway answers 200 with the headers,
 *       nothing goes upstream; a cached token, one EVALSHA per decision; paired with d
 *   db  d with a budget shared by an organisation (SPEC §22, `claim:org_id`; the token carries the
 *       claim): every call counts in its own window and the organisation's, in the one EVALSHA
 *   dc  d with `cost: 2` on the read class (SPEC §22): every call spends 2 units
 *   du  d with usage bookkeeping (SPEC §21): a calendar window (`period: month`, which top callers
 *       and thresholds are kept for) beside the class's window, `top_callers` on and a webhook with
 *       thresholds 0.8 and 1.0
 *       (db, dc, du: limits never reached; each paired with d round by round, issue 41's feature cells)
 *
 * then the cache-churn runs (10k tokens and identities) and the cold-token runs (every token new):
 * opaque tokens introspected by oidc-provider, and JWTs from the same provider validated locally. Servers run on core 0; wrk and redis-server (which stands for its
 * own host) on core 1 (taskset). Warm cells use a static tokens file with one token, warmed before
 * measuring. `npm run bench:profile` profiles
 * instead (see profile.ts).
 *
 * Environment: BENCH_ROUNDS (3), BENCH_SECONDS per cell (5), BENCH_CONNECTIONS (64),
 * BENCH_COLD_TOKENS (10000), BENCH_COLD_SECONDS (cap on the cold run, 30); for A/B experiments,
 * BENCH_CELLS (comma list of cells to run, e.g. "b,c,d"; churn/cold only when unset; the gateways
 * BENCH_ALT_MAIN, BENCH_ALT_NODE_ARGS and BENCH_NODES add run with their base, c or d) and
 * BENCH_CELLS=churn runs the churn cells alone, and BENCH_CHURN_NODE_ARGS (";"-separated sets of
 * `node` flags, e.g. "--max-old-space-size=64") adds them again under each set;
 * BENCH_GATEWAY_MAIN (another build's main.js), BENCH_SAMPLES_JSON (a file the measured rounds are
 * written to, for crossover.ts); BENCH_ALT_MAIN, BENCH_ALT_NODE_ARGS and BENCH_NODES
 * add gateways paired with c and d (variants.ts: another build, extra node flags, other runtimes).
 *
 * Every server the bench starts loads `gc-stats.mjs` (BENCH_GC=0 leaves it out): over each measured
 * run, saturated and open-loop, the table gives the server's bytes allocated and promoted to the old
 * generation per request and its young and full collections per 10 000 requests with their p99
 * pause, read from V8's GCProfiler in the server process.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { cpuMicros, cpuMicrosTree, isPinned, pinSelf, processTree, rssBytes, sleep } from "./procs.js";
import { fmt, med, type Row, type Sample } from "./report.js";
import { gcRead, gcSingleProcess, gcStart } from "./gc-window.js";
import {
  get,
  metricSum,
  startAuthServer,
  startBareProxy,
  startCollectorSink,
  startFastifyPeer,
  startGateway,
  startRedis,
  startUndiciProxy,
  startUpstream,
  writeChurnTokens,
  writeWarmTokens,
  longOpaqueToken,
  PRO_READ_LIMIT,
  type BenchAuthServer,
  type BenchRedis,
  type GatewayTarget,
  type GatewayVariant,
  type Target,
} from "./targets.js";
import { hasNginx, startNginxUpstream } from "./nginx-upstream.js";
import { report } from "./run-report.js";
import { variantSpecs } from "./variants.js";
import { openLoopSection, type OpenLoopCell, type OpenLoopSection } from "./open-loop-runs.js";
import { cyclingTokenScript, ensureWrk, runWrk, staticTokenScript } from "./wrk.js";

function envInt(name: string, dflt: number, min: number, max: number): number {
  const v = Number(process.env[name] ?? dflt);
  return Number.isInteger(v) ? Math.min(Math.max(v, min), max) : dflt;
}

const ROUNDS = envInt("BENCH_ROUNDS", 3, 1, 20);
const SECONDS = envInt("BENCH_SECONDS", 5, 1, 120);
const CONNECTIONS = envInt("BENCH_CONNECTIONS", 64, 1, 1024);
const COLD_TOKENS = envInt("BENCH_COLD_TOKENS", 10_000, 100, 100_000);
const COLD_SECONDS = envInt("BENCH_COLD_SECONDS", 30, 1, 120);
const CHURN_TOKENS = 10_000;
const WARMUP_S = 4;
/** Warm-up before each measured run of a cell (s). */
const ROUND_WARMUP_S = 2;
const TOKEN = "bench-warm-token";
/** Length of oidc-provider's RS256 access-token JWTs here (chars): cell dl's token when the IdP is down. */
const JWT_LENGTH = 648;
const PATH = "/v1/user";
/** Calls per second the over-limit cell (g) admits; wrk offers about 20 times that. */
const OVER_LIMIT_RPS = 500;
/** Rounds of the open-loop runs (each: 2 rates x the open-loop cells x BENCH_SECONDS). */
const OPEN_ROUNDS = envInt("BENCH_OPEN_ROUNDS", 3, 0, 20);
/** Cells driven at a constant rate after the saturation rounds. */
const OPEN_LOOP_CELLS = ["a", "h", "b2", "fy", "c", "d", "dm"];
/** Where the measured cells' samples go as JSON (`{ "<cell>": Sample[] }`), for crossover.ts. */
const SAMPLES_JSON = process.env.BENCH_SAMPLES_JSON;
const LAST_RUN = fileURLToPath(new URL("./runs/last-run.md", import.meta.url));

/** One column of the interleaved table. */
interface Cell {
  id: string;
  label: string;
  target: Target | null;
  gateway?: GatewayTarget;
  redis?: BenchRedis;
  check?: (r: Awaited<ReturnType<typeof get>>) => string | null;
  /** The cell's bearer token and wrk script when not the shared warm token's. */
  token?: string;
  script?: string;
  row: Row;
}

/** Measures one wrk run against `cell`, with CPU, Redis and metric deltas around it. */
async function measure(
  target: Target,
  script: string,
  seconds: number,
  extra: { gateway?: GatewayTarget; redis?: BenchRedis } = {},
  doneFile?: string,
): Promise<Sample> {
  const m0 = extra.gateway === undefined ? "" : await extra.gateway.metrics();
  const r0 = extra.redis === undefined ? null : await extra.redis.commandCalls();
  const rc0 = extra.redis === undefined ? 0 : cpuMicros(extra.redis.child.pid);
  const pids = processTree(target.child.pid);
  const tree = pids.length > 1;
  const gcOne = gcSingleProcess(pids);
  const c0 = cpuMicrosTree(target.child.pid);
  const p0 = cpuMicros(target.child.pid);
  // The collector's window (gc-stats.mjs): one process only; a workers tree's figures would mix.
  if (gcOne) await gcStart(target.child.pid);
  const w = await runWrk(target.url + PATH, {
    seconds,
    connections: CONNECTIONS,
    script,
    ...(doneFile === undefined ? {} : { doneFile }),
  });
  const c1 = cpuMicrosTree(target.child.pid);
  const p1 = cpuMicros(target.child.pid);
  const gc = gcOne ? await gcRead(target.child.pid, w.requests) : undefined;
  const rc1 = extra.redis === undefined ? 0 : cpuMicros(extra.redis.child.pid);
  const r1 = extra.redis === undefined ? null : await extra.redis.commandCalls();
  const m1 = extra.gateway === undefined ? "" : await extra.gateway.metrics();
  const n = Math.max(w.requests, 1);
  const sample: Sample = {
    rps: w.rps,
    p50Ms: w.p50Ms,
    p99Ms: w.p99Ms,
    requests: w.requests,
    cpuUsPerReq: (c1 - c0) / n,
    non2xx: w.non2xx,
    socketErrors: w.socketErrors,
  };
  if (gc !== undefined) sample.gc = gc;
  if (tree) sample.primaryCpuUsPerReq = (p1 - p0) / n;
  if (r0 !== null && r1 !== null) {
    sample.redisPerReq = {};
    for (const [cmd, calls] of r1) {
      const d = calls - (r0.get(cmd) ?? 0);
      // The harness's own INFO calls are not the gateway's.
      if (cmd !== "info" && d > 0) sample.redisPerReq[cmd] = d / n;
    }
    sample.redisCpuUsPerReq = (rc1 - rc0) / n;
  }
  if (extra.gateway !== undefined) {
    const delta = (name: string, filter?: string) =>
      metricSum(m1, name, filter) - metricSum(m0, name, filter);
    sample.sourceCallsPerReq = delta("gateway_token_cache_lookups_total", 'result="miss"') / n;
    sample.introspectionsPerReq = delta("gateway_introspection_requests_total") / n;
    sample.localRejections = delta("gateway_ratelimit_local_rejections_total");
  }
  return sample;
}

function gatewayCheck(expectIetf: boolean, resource: string, limit?: number) {
  return (r: Awaited<ReturnType<typeof get>>): string | null => {
    if (r.status !== 200) return `answers ${r.status}: ${r.body.slice(0, 160)}`;
    if (r.headers["x-ratelimit-limit"] === undefined) return "no X-RateLimit-Limit header";
    if (limit !== undefined && r.headers["x-ratelimit-limit"] !== String(limit))
      return `X-RateLimit-Limit is ${String(r.headers["x-ratelimit-limit"])}, expected the plan's ${limit}`;
    if (r.headers["x-ratelimit-resource"] !== resource)
      return `X-RateLimit-Resource is ${String(r.headers["x-ratelimit-resource"])}, expected ${resource}`;
    if (expectIetf && r.headers["ratelimit"] === undefined) return "no RateLimit header (headers.ietf)";
    return null;
  };
}

/** The over-limit cell answers 200 until its second's calls are spent, then 429 (both decorated). */
function overLimitCheck(r: Awaited<ReturnType<typeof get>>): string | null {
  if (r.status !== 200 && r.status !== 429) return `answers ${r.status}: ${r.body.slice(0, 160)}`;
  if (r.headers["x-ratelimit-resource"] !== "read") return "no X-RateLimit-Resource: read";
  return null;
}

/** As {@link gatewayCheck}, and the units spent so far (limit − remaining) are a multiple of `cost`. */
function costCheck(cost: number) {
  const base = gatewayCheck(false, "read");
  return (r: Awaited<ReturnType<typeof get>>): string | null => {
    const spent = Number(r.headers["x-ratelimit-limit"]) - Number(r.headers["x-ratelimit-remaining"]);
    return (
      base(r) ?? (spent > 0 && spent % cost === 0 ? null : `spent ${spent} units, not a multiple of ${cost}`)
    );
  };
}

/**
 * Whether BENCH_CELLS's list selects cell `id`: named, or a gateway the environment added
 * (variants.ts: `c*`, `d@22`, …) whose base (c or d) is named, so it is paired as it should be.
 */
function selected(only: readonly string[], id: string): boolean {
  return only.includes(id) || (/^[cd][*@]/.test(id) && only.includes(id.slice(0, 1)));
}

/** Starts a gateway; a failure (e.g. Redis store not ready yet) becomes a "pending" reason. */
async function tryGateway(
  name: string,
  dir: string,
  upstream: Target,
  v: GatewayVariant,
): Promise<GatewayTarget | string> {
  try {
    return await startGateway(name, dir, upstream.url, v);
  } catch (err) {
    return (err as Error).message.split("\n")[0]!.slice(0, 200);
  }
}

/**
 * Scripts run: ioredis sends a connection's first call of a script as EVAL (a worker's first
 * request), later ones as EVALSHA.
 */
const scriptCalls = (calls: Map<string, number>): number =>
  (calls.get("evalsha") ?? 0) + (calls.get("eval") ?? 0);

/** True when a request through `gw` reaches Redis (not the fail-open memory fallback). */
async function usesRedis(gw: GatewayTarget, redis: BenchRedis, token: string): Promise<string | null> {
  const before = scriptCalls(await redis.commandCalls());
  await get(gw.url + PATH, { authorization: `Bearer ${token}` });
  const after = scriptCalls(await redis.commandCalls());
  const degraded = metricSum(await gw.metrics(), "gateway_ratelimit_store_degraded");
  if (after === before) return "no script call reached Redis (store not wired or failing open)";
  if (degraded !== 0) return "limit store degraded (failing open to memory)";
  return null;
}

async function main(): Promise<number> {
  if (process.argv.includes("--profile")) {
    const { profileMain } = await import("./profile.js");
    return profileMain();
  }
  const missing = ensureWrk();
  if (missing !== null) {
    console.error(missing);
    return 1;
  }
  pinSelf();
  const only = process.env.BENCH_CELLS?.split(",").map((c) => c.trim());
  const dir = mkdtempSync(path.join(tmpdir(), "gateway-bench-"));
  const started: { child: { stop(): Promise<void> } }[] = [];
  const keep = <T extends { child: { stop(): Promise<void> } }>(t: T): T => (started.push(t), t);
  const t0 = Date.now();
  try {
    console.log(
      `bench: ${ROUNDS} rounds x ${SECONDS} s per cell, ${CONNECTIONS} connections, ` +
        `servers ${isPinned ? "on core 0, wrk and redis-server on core 1" : "unpinned (no taskset)"}`,
    );
    const upstream = keep(hasNginx ? await startNginxUpstream(dir) : await startUpstream());
    const redis = keep(await startRedis(dir));
    const script = staticTokenScript(dir, TOKEN);
    const bareH = keep(await startBareProxy(upstream.url, "http-proxy"));
    const bare = keep(await startBareProxy(upstream.url, "http-proxy-3"));
    const fastify = keep(await startFastifyPeer(upstream.url, redis.url));
    const undici = keep(await startUndiciProxy(upstream.url, "dispatch"));
    const undiciStream = keep(await startUndiciProxy(upstream.url, "stream"));
    // The IdP issues the cold runs' tokens and the warm JWT cell's token up front.
    let auth: BenchAuthServer | string = "not selected";
    if (only === undefined || only.includes("dj") || only.includes("dl")) {
      console.log(
        `identity provider: issuing ${COLD_TOKENS} opaque tokens and ${COLD_TOKENS} JWTs (RS256) with oidc-provider…`,
      );
      try {
        auth = keep(await startAuthServer(dir, COLD_TOKENS, COLD_TOKENS, 300_000));
      } catch (err) {
        auth = (err as Error).message.slice(0, 200);
      }
    }
    // dl: an opaque token as long as the IdP's JWT (its length when the IdP is up), in the tokens file.
    const longToken = longOpaqueToken(typeof auth === "string" ? JWT_LENGTH : auth.warmJwt.length);
    const warmTokens = writeWarmTokens(dir, TOKEN, longToken);
    // db: the same token carrying `org_id`; du: its webhook's signing secret.
    const orgTokens = writeWarmTokens(dir, TOKEN, longToken, "bench-org");
    const webhookSecret = path.join(dir, "webhook-secret");
    writeFileSync(webhookSecret, "bench-secret\n");
    const sink = keep(await startCollectorSink());
    const traced = (sampleRatio: number, keyPrefix: string): GatewayVariant => ({
      tokensFile: warmTokens,
      redisUrl: redis.url,
      keyPrefix,
      tracing: { endpoint: sink.endpoint, sampleRatio },
    });
    /** d's configuration (the warm token, Redis under its own key prefix) plus a cell's own. */
    const onRedis = (keyPrefix: string, own: Partial<GatewayVariant> = {}): GatewayVariant => ({
      tokensFile: warmTokens,
      redisUrl: redis.url,
      keyPrefix,
      ...own,
    });
    const gw = {
      c: await tryGateway("c-memory", dir, upstream, { tokensFile: warmTokens }),
      d: await tryGateway("d-redis", dir, upstream, onRedis("bd")),
      e: await tryGateway("e-redis-ietf-shadow", dir, upstream, onRedis("be", { ietf: true, shadow: true })),
      f: await tryGateway("f-redis-plans", dir, upstream, onRedis("bf", { plans: true })),
      g: await tryGateway(
        "g-redis-over-limit",
        dir,
        upstream,
        onRedis("bg", { readPerSecond: OVER_LIMIT_RPS }),
      ),
      w2: await tryGateway("w2-redis-2-workers", dir, upstream, onRedis("bw", { workers: 2 })),
      // Issue 29: V8's default concurrent marking, which gc-tuning.ts turns off on Node 20 (an
      // operator's own flag is left alone); paired with d, and driven open-loop.
      dm: await tryGateway(
        "dm-redis-concurrent-marking",
        dir,
        upstream,
        onRedis("bdm", { nodeArgs: ["--concurrent-marking"] }),
      ),
      dd: await tryGateway("dd-redis-decision", dir, upstream, onRedis("bdd", { decision: true })),
      db: await tryGateway("db-redis-org-budget", dir, upstream, {
        tokensFile: orgTokens,
        redisUrl: redis.url,
        keyPrefix: "bdb",
        orgBudget: true,
      }),
      dc: await tryGateway("dc-redis-cost-2", dir, upstream, onRedis("bdc", { cost: 2 })),
      du: await tryGateway(
        "du-redis-usage-ops",
        dir,
        upstream,
        onRedis("bdu", { secondWindow: "calendar", usageOps: { secretFile: webhookSecret } }),
      ),
      t1: await tryGateway("t1-redis-tracing-0.01", dir, upstream, traced(0.01, "bt1")),
      t100: await tryGateway("t100-redis-tracing-1.0", dir, upstream, traced(1, "bt100")),
      u1: await tryGateway("u1-redis-unpinned", dir, upstream, onRedis("bu1", { core: "0,1" })),
      u2: await tryGateway(
        "u2-redis-2-workers-unpinned",
        dir,
        upstream,
        onRedis("bu2", { workers: 2, core: "0,1" }),
      ),
    };
    const dj =
      typeof auth === "string"
        ? auth
        : await tryGateway("dj-redis-jwt", dir, upstream, {
            redisUrl: redis.url,
            keyPrefix: "bdj",
            introspection: {
              url: auth.introspectionUrl,
              clientId: auth.clientId,
              clientSecret: auth.clientSecret,
            },
            jwt: { issuer: auth.issuer, audience: auth.audience },
          });
    if (typeof dj !== "string") keep(dj);
    const variants = await Promise.all(
      variantSpecs().map(async (v) => ({
        spec: v,
        gw: await tryGateway(`${v.id.replace(/[^a-z0-9]/g, "-")}-variant`, dir, upstream, {
          tokensFile: warmTokens,
          ...(v.base === "d"
            ? { redisUrl: redis.url, keyPrefix: `bv${v.id.replace(/[^a-z0-9]/g, "")}` }
            : {}),
          ...(v.main === undefined ? {} : { main: v.main }),
          ...(v.node === undefined ? {} : { node: v.node }),
          ...(v.nodeArgs === undefined ? {} : { nodeArgs: v.nodeArgs }),
        }),
      })),
    );
    for (const g of [...Object.values(gw), ...variants.map((v) => v.gw)]) if (typeof g !== "string") keep(g);
    console.log(`servers started (${fmt((Date.now() - t0) / 1000, 0)} s)`);
    const row = (id: string, label: string): Row => ({ id, label, samples: [] });
    const cells: Cell[] = [
      {
        id: "a",
        label: "upstream alone",
        target: upstream,
        row: row("a", `upstream alone (${hasNginx ? "nginx" : "Node http"}, load core)`),
      },
      {
        id: "h",
        label: "bare http-proxy 1.18",
        target: bareH,
        row: row("h", "bare http-proxy 1.18 (keep-alive agent)"),
      },
      {
        id: "b",
        label: "bare http-proxy-3",
        target: bare,
        row: row("b", "bare http-proxy-3 (keep-alive agent)"),
      },
      {
        id: "b2",
        label: "undici dispatch",
        target: undici,
        row: row("b2", "bare undici Pool proxy, dispatch()"),
      },
      {
        id: "b3",
        label: "undici stream",
        target: undiciStream,
        row: row("b3", "bare undici Pool proxy, stream()"),
      },
      {
        id: "fy",
        label: "Fastify peer",
        target: fastify,
        redis,
        row: row(
          "fy",
          "Fastify + @fastify/http-proxy + @fastify/rate-limit on Redis (no auth, log, metrics)",
        ),
        check: (r) =>
          r.status === 200 && r.headers["x-ratelimit-limit"] !== undefined ? null : `answers ${r.status}`,
      },
    ];
    const gwCell = (
      id: keyof typeof gw,
      label: string,
      ietf: boolean,
      resource: string,
      useRedis: boolean,
      limit?: number,
    ) => {
      const g = gw[id];
      const cell: Cell = {
        id,
        label,
        target: null,
        row: row(id, label),
        check: gatewayCheck(ietf, resource, limit),
      };
      if (typeof g === "string") cell.row.pending = g;
      else {
        cell.target = g;
        cell.gateway = g;
        if (useRedis) cell.redis = redis;
      }
      cells.push(cell);
    };
    gwCell("c", "gateway, memory store", false, "read", false);
    gwCell("d", "gateway, Redis store", false, "read", true);
    gwCell("e", "gateway, Redis, IETF headers + shadow class", true, "user", true);
    gwCell("f", "gateway, Redis store, plans + 1000 consumers", false, "read", true, PRO_READ_LIMIT);
    gwCell("g", `gateway, Redis store, one identity over its ${OVER_LIMIT_RPS}/s limit`, false, "read", true);
    cells.at(-1)!.check = overLimitCheck;
    gwCell("w2", "gateway, Redis store, workers: 2 (same core)", false, "read", true);
    {
      const label = "gateway, Redis store, warm JWT (auth.jwt beside introspection)";
      const cell: Cell = {
        id: "dj",
        label,
        target: null,
        row: row("dj", label),
        check: gatewayCheck(false, "read"),
      };
      if (typeof dj === "string") cell.row.pending = dj;
      else if (typeof auth !== "string") {
        cell.target = dj;
        cell.gateway = dj;
        cell.redis = redis;
        cell.token = auth.warmJwt;
        cell.script = staticTokenScript(dir, auth.warmJwt, "warm-jwt");
      }
      cells.push(cell);
    }
    {
      const label = `gateway, Redis store, warm opaque token of the JWT's length (${longToken.length} chars)`;
      const d = gw.d;
      const cell: Cell = {
        id: "dl",
        label,
        target: null,
        row: row("dl", label),
        check: gatewayCheck(false, "read"),
      };
      if (typeof d === "string") cell.row.pending = d;
      else {
        cell.target = d;
        cell.gateway = d;
        cell.redis = redis;
        cell.token = longToken;
        cell.script = staticTokenScript(dir, longToken, "warm-long");
      }
      cells.push(cell);
    }
    gwCell(
      "dm",
      "gateway, Redis store, V8's concurrent marking on (node --concurrent-marking)",
      false,
      "read",
      true,
    );
    gwCell("dd", "gateway, Redis store, decision listener (nothing proxied)", false, "read", true);
    gwCell("db", "gateway, Redis store, an organisation budget (claim:org_id)", false, "read", true);
    gwCell("dc", "gateway, Redis store, cost: 2 on the read class", false, "read", true);
    cells.at(-1)!.check = costCheck(2);
    gwCell(
      "du",
      "gateway, Redis store, usage bookkeeping (calendar window, top_callers, threshold webhook)",
      false,
      "read",
      true,
    );
    gwCell("t1", "gateway, Redis store, tracing sample_ratio 0.01", false, "read", true);
    gwCell("t100", "gateway, Redis store, tracing sample_ratio 1.0", false, "read", true);
    gwCell("u1", "gateway, Redis store, unpinned (both cores)", false, "read", true);
    gwCell("u2", "gateway, Redis store, workers: 2, unpinned (both cores)", false, "read", true);
    for (const { spec, gw: g } of variants) {
      const cell: Cell = {
        id: spec.id,
        label: spec.label,
        target: typeof g === "string" ? null : g,
        row: row(spec.id, spec.label),
        check: gatewayCheck(false, "read"),
        ...(spec.base === "d" ? { redis } : {}),
      };
      if (typeof g === "string") cell.row.pending = g;
      else cell.gateway = g;
      cells.push(cell);
    }

    // Sanity: each cell answers 200 with the expected headers; Redis cells really use Redis.
    for (const cell of cells) {
      if (cell.target === null || (only !== undefined && !selected(only, cell.id))) continue;
      const token = cell.token ?? TOKEN;
      const r = await get(cell.target.url + PATH, { authorization: `Bearer ${token}` }).catch((e: Error) => ({
        status: 0,
        headers: {},
        body: e.message,
      }));
      let problem = cell.check?.(r) ?? (r.status === 200 ? null : `answers ${r.status}`);
      if (problem === null && cell.redis !== undefined && cell.gateway !== undefined)
        problem = await usesRedis(cell.gateway, cell.redis, token);
      if (problem !== null) {
        console.log(`  ${cell.id}: pending — ${problem}`);
        cell.row.pending = problem;
        cell.target = null;
      }
    }
    if (only !== undefined)
      for (const c of cells) if (!selected(only, c.id)) c.row.pending ??= "not selected";
    const active = cells.filter((c) => c.target !== null && c.row.pending === undefined);
    console.log(
      `checked (${fmt((Date.now() - t0) / 1000, 0)} s); warm-up: ${WARMUP_S} s per cell (JIT, pooled connections, token cache)`,
    );
    for (const cell of active) await runWarmup(cell.target!, cell.script ?? script);

    for (let round = 0; round < ROUNDS; round++) {
      // Rotate the order so no cell always runs first (or right after the same neighbour).
      const order = active.map((_, i) => active[(i + round) % active.length]!);
      for (const cell of order) {
        // Each cell sat idle while the others ran; V8 may have let its code go cold meanwhile
        // (seen: the gateway's CPU per request far higher right after a long idle gap), so each
        // measurement follows its own short warm-up.
        await runWrk(cell.target!.url + PATH, {
          seconds: ROUND_WARMUP_S,
          connections: CONNECTIONS,
          script: cell.script ?? script,
        });
        const s = await measure(cell.target!, cell.script ?? script, SECONDS, {
          ...(cell.gateway === undefined ? {} : { gateway: cell.gateway }),
          ...(cell.redis === undefined ? {} : { redis: cell.redis }),
        });
        cell.row.samples.push(s);
        console.log(
          `  round ${round + 1}/${ROUNDS} ${cell.id.padEnd(2)} ${fmt(s.rps, 0).padStart(7)} req/s  ` +
            `p50 ${fmt(s.p50Ms, 2)} ms  p99 ${fmt(s.p99Ms, 2)} ms  ${fmt(s.cpuUsPerReq, 0)} µs/req` +
            (s.non2xx + s.socketErrors > 0 ? `  non-2xx ${s.non2xx} errors ${s.socketErrors}` : ""),
        );
        await sleep(300);
      }
    }
    for (const cell of active) cell.row.rssMb = rssBytes(cell.target!.child.pid) / 2 ** 20;
    // crossover.ts reads the rounds back (one file per run it starts).
    if (SAMPLES_JSON !== undefined)
      writeFileSync(
        SAMPLES_JSON,
        JSON.stringify(Object.fromEntries(active.map((c) => [c.id, c.row.samples]))),
      );
    const tracingNotes = await spanCounts(active.filter((c) => c.id === "t1" || c.id === "t100"));
    const openLoop = await openLoopRuns(active, script);
    // Free the server core for the runs below.
    console.log(`measured (${fmt((Date.now() - t0) / 1000, 0)} s)`);
    await Promise.all(active.filter((c) => c.id !== "a").map((c) => c.target!.child.stop()));
    console.log(`stopped (${fmt((Date.now() - t0) / 1000, 0)} s)`);

    // BENCH_CELLS=churn: the churn runs alone (with BENCH_CHURN_NODE_ARGS's variants).
    const extraRows =
      only === undefined || only.includes("churn")
        ? (await churnAndCold(dir, upstream, redis, only === undefined ? auth : "not selected", keep)).filter(
            (r) => r.pending !== "not selected",
          )
        : [];
    const rows = cells.map((c) => c.row).filter((r) => r.pending !== "not selected");
    const md = report(rows, extraRows, {
      rounds: ROUNDS,
      seconds: SECONDS,
      connections: CONNECTIONS,
      path: PATH,
      overLimitRps: OVER_LIMIT_RPS,
      tracingNotes,
      openLoop,
      elapsedS: (Date.now() - t0) / 1000,
    });
    console.log(`\n${md}`);
    if (only === undefined) {
      writeFileSync(LAST_RUN, md);
      console.log(`\nwritten to ${path.relative(process.cwd(), LAST_RUN)}`);
    }
    return 0;
  } finally {
    await Promise.all(started.map((t) => t.child.stop().catch(() => undefined)));
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Where a churned gateway's memory is: V8's heap by space from its `/metrics`
 * (prom-client's default metrics), then the heap still used after the full collection a heap
 * snapshot makes, i.e. the live data.
 */
async function heapAfterLoad(g: GatewayTarget, snapshots: string): Promise<string> {
  const mb = (page: string, name: string, filter?: string) => fmt(metricSum(page, name, filter) / 2 ** 20, 0);
  const before = await g.metrics();
  const files = readdirSync(snapshots).length;
  process.kill(g.child.pid, "SIGUSR2");
  // The snapshot is written synchronously after the collection; its file appearing means done.
  for (let i = 0; i < 300 && readdirSync(snapshots).length === files; i++) await sleep(100);
  await sleep(500);
  const after = await g.metrics();
  return (
    `heap before: ${mb(before, "nodejs_heap_size_used_bytes")} MB used of ` +
    `${mb(before, "nodejs_heap_size_total_bytes")} MB (new space ` +
    `${mb(before, "nodejs_heap_space_size_total_bytes", 'space="new"')} MB, old space used ` +
    `${mb(before, "nodejs_heap_space_size_used_bytes", 'space="old"')} MB), external ` +
    `${mb(before, "nodejs_external_memory_bytes")} MB; live heap after a full collection ` +
    `${mb(after, "nodejs_heap_size_used_bytes")} MB`
  );
}

/** The open-loop runs against the selected cells, at 50 % and 80 % of cell h's median (report lines). */
async function openLoopRuns(active: readonly Cell[], script: string): Promise<OpenLoopSection> {
  const h = active.find((c) => c.id === "h");
  if (OPEN_ROUNDS === 0 || h === undefined) return { lines: [], summaries: [] };
  const cells: OpenLoopCell[] = active
    .filter((c) => OPEN_LOOP_CELLS.includes(c.id) || /^[cd][*@]/.test(c.id))
    .map((c) => ({
      id: c.id,
      label: c.row.label,
      url: c.target!.url + PATH,
      token: c.token ?? TOKEN,
      pid: c.target!.child.pid,
    }));
  console.log(`open loop: ${cells.map((c) => c.id).join(", ")} at 50 % and 80 % of h, ${OPEN_ROUNDS} rounds`);
  const warm = (cell: OpenLoopCell) =>
    runWrk(cell.url, { seconds: ROUND_WARMUP_S, connections: CONNECTIONS, script }).then(() => undefined);
  return openLoopSection(
    cells,
    med(h.row.samples, (s) => s.rps),
    {
      warm,
      rounds: OPEN_ROUNDS,
      seconds: SECONDS,
      connections: CONNECTIONS,
      baseId: "h",
      gatewayId: "d",
    },
  );
}

/** Spans each tracing cell exported and dropped over the whole run (warm-up included). */
async function spanCounts(cells: readonly Cell[]): Promise<string[]> {
  // Let the last round's spans leave the queue (the gateway's batch delay is 1 s).
  if (cells.length > 0) await sleep(1500);
  const out: string[] = [];
  for (const cell of cells) {
    const page = await cell.gateway!.metrics();
    const requests = metricSum(page, "gateway_requests_total");
    const exported = metricSum(page, "gateway_tracing_spans_exported_total");
    const queueFull = metricSum(page, "gateway_tracing_spans_dropped_total", 'reason="queue_full"');
    const failed = metricSum(page, "gateway_tracing_spans_dropped_total", 'reason="export_failed"');
    out.push(
      `- ${cell.id}: ${fmt(requests, 0)} requests, ${fmt(exported, 0)} spans exported ` +
        `(${fmt(exported / Math.max(requests, 1), 3)} per request), dropped ${fmt(queueFull, 0)} queue_full, ` +
        `${fmt(failed, 0)} export_failed`,
    );
  }
  return out;
}

async function runWarmup(target: Target, script: string): Promise<void> {
  await runWrk(target.url + PATH, { seconds: WARMUP_S, connections: CONNECTIONS, script });
}

/** The churn runs (memory and Redis) and the two cold-token runs, each on a fresh gateway. */
async function churnAndCold(
  dir: string,
  upstream: Target,
  redis: BenchRedis,
  auth: BenchAuthServer | string,
  keep: <T extends { child: { stop(): Promise<void> } }>(t: T) => T,
): Promise<Row[]> {
  const rows: Row[] = [];
  const churn = writeChurnTokens(dir, CHURN_TOKENS);
  const churnScript = cyclingTokenScript(dir, churn.listFile, false, "churn").script;
  // A heap snapshot on SIGUSR2 (written to the cell's directory) forces a full collection first:
  // the heap used right after it is the live data, the rest of RSS the collector's headroom.
  const snapshots = path.join(dir, "heap");
  mkdirSync(snapshots, { recursive: true });
  const heap = { nodeArgs: ["--heapsnapshot-signal=SIGUSR2"], cwd: snapshots };
  const variants: [string, string, GatewayVariant][] = [];
  // Each BENCH_CHURN_NODE_ARGS entry (";"-separated) adds both churn cells under those node flags.
  const flagSets = [
    "",
    ...(process.env.BENCH_CHURN_NODE_ARGS ?? "").split(";").filter((f) => f.trim() !== ""),
  ];
  for (const [i, flags] of flagSets.entries()) {
    const nodeArgs = [...heap.nodeArgs, ...flags.split(" ").filter((f) => f !== "")];
    const tag = i === 0 ? "" : `+${i}`;
    const also = i === 0 ? "" : `, node ${flags.trim()}`;
    variants.push(
      [
        `churn-m${tag}`,
        `10k tokens/identities, memory store${also}`,
        { tokensFile: churn.tokensFile, ...heap, nodeArgs },
      ],
      [
        `churn-r${tag}`,
        `10k tokens/identities, Redis store${also}`,
        { tokensFile: churn.tokensFile, redisUrl: redis.url, keyPrefix: `bc${i}`, ...heap, nodeArgs },
      ],
    );
  }
  for (const [id, label, v] of variants) {
    const g = await tryGateway(id, dir, upstream, v);
    if (typeof g === "string") {
      rows.push({ id, label, samples: [], pending: g });
      continue;
    }
    keep(g);
    // First pass: every token once (static-source lookups fill the cache); then measure the
    // warm churn: 10k cached tokens and 10k identities' windows, cycled.
    const firstPass = cyclingTokenScript(dir, churn.listFile, true, `${id}-pass`);
    await runWrk(g.url + PATH, { seconds: 60, connections: CONNECTIONS, ...firstPass });
    const s = await measure(g, churnScript, SECONDS, { gateway: g, ...(v.redisUrl ? { redis } : {}) });
    const rssMb = rssBytes(g.child.pid) / 2 ** 20;
    const memory = await heapAfterLoad(g, snapshots);
    console.log(`  ${id}: ${fmt(s.rps, 0)} req/s, RSS after ${fmt(rssMb, 0)} MB; ${memory}`);
    rows.push({
      id,
      label,
      samples: [s],
      rssMb,
      note: `${fmt(s.sourceCallsPerReq! * s.requests, 0)} token-source calls; ${memory}`,
    });
    await g.child.stop();
  }

  if (typeof auth === "string") {
    rows.push({ id: "cold", label: "cold tokens", samples: [], pending: auth });
    return rows;
  }
  const rate = (auth.issued / auth.issueMs) * 1000;
  const jwtRate = (auth.jwtIssued / auth.jwtIssueMs) * 1000;
  console.log(
    `  issued ${auth.issued} opaque tokens in ${fmt(auth.issueMs / 1000, 1)} s (${fmt(rate, 0)}/s), ` +
      `${auth.jwtIssued} JWTs in ${fmt(auth.jwtIssueMs / 1000, 1)} s (${fmt(jwtRate, 0)}/s)`,
  );
  const introspection = {
    url: auth.introspectionUrl,
    clientId: auth.clientId,
    clientSecret: auth.clientSecret,
  };
  const coldCells: [string, string, GatewayVariant, string, string][] = [
    [
      "cold",
      "cold tokens (introspection per call), Redis store",
      { redisUrl: redis.url, keyPrefix: "bk", introspection },
      auth.tokensFile,
      `${auth.issued} tokens issued in ${fmt(auth.issueMs / 1000, 1)} s (${fmt(rate, 0)}/s)`,
    ],
    [
      "cold-jwt",
      "cold JWTs (RS256, validated locally per call), Redis store",
      {
        redisUrl: redis.url,
        keyPrefix: "bkj",
        introspection,
        jwt: { issuer: auth.issuer, audience: auth.audience },
      },
      auth.jwtFile,
      `${auth.jwtIssued} JWTs issued in ${fmt(auth.jwtIssueMs / 1000, 1)} s (${fmt(jwtRate, 0)}/s)`,
    ],
  ];
  for (const [id, label, v, tokensFile, issued] of coldCells) {
    const g = await tryGateway(id, dir, upstream, v);
    if (typeof g === "string") {
      rows.push({ id, label, samples: [], pending: g });
      continue;
    }
    keep(g);
    if (v.jwt !== undefined) {
      // Its key set is fetched at start: the warm JWT (in neither token file) shows it is held.
      const ready = await get(g.url + PATH, { authorization: `Bearer ${auth.warmJwt}` });
      if (ready.status !== 200) {
        rows.push({ id, label, samples: [], pending: `the warm JWT answered ${ready.status}` });
        await g.child.stop();
        continue;
      }
    }
    const cold = cyclingTokenScript(dir, tokensFile, true, id);
    const a0 = cpuMicros(auth.child.pid);
    const s = await measure(g, cold.script, COLD_SECONDS, { gateway: g, redis }, cold.doneFile);
    const authCpu = (cpuMicros(auth.child.pid) - a0) / Math.max(s.requests, 1);
    const rssMb = rssBytes(g.child.pid) / 2 ** 20;
    console.log(`  ${id}: ${fmt(s.rps, 0)} req/s, ${fmt(s.introspectionsPerReq ?? 0, 3)} introspections/req`);
    rows.push({
      id,
      label,
      samples: [s],
      rssMb,
      note: `${issued}; oidc-provider CPU ${fmt(authCpu, 0)} µs/req`,
    });
    await g.child.stop();
  }
  return rows;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exitCode = 1;
  },
);
