/**
 * Soak, not part of `npm test`: `node --import tsx test/soak/soak.ts`.
 *
 * For SOAK_SECONDS (default 60) several concurrent loops send mixed traffic — warm valid tokens,
 * never-seen valid tokens, random invalid tokens, malformed and missing headers, from several
 * client IPs — to one gateway on a real `redis-server` and a real RFC 7662 server (oidc-provider),
 * while the script kills and restarts Redis, hangs it (SIGSTOP), and stops and restarts the
 * authorization server. Everything runs in this process, so a leak anywhere shows.
 *
 * It checks that
 * - only the expected statuses occur, per kind of call: a token that authenticated once never gets
 *   anything but 200/429 (stale-if-error covers authorization-server outages); 503
 *   "Authentication service unavailable" only for never-authenticated tokens and only while the
 *   authorization server is down; never a 5xx from the limit store (failure_mode open);
 * - after the run, at a quiet moment, the active handles (`process.getActiveResourcesInfo()`) are
 *   back at the warm-up baseline and RSS / heap after GC are within a tolerance of it;
 * - the limit store is back on Redis (not degraded) at the end.
 *
 * Prints a summary table and exits 1 on any violation.
 *
 * Environment: SOAK_SECONDS (60), SOAK_LOOPS (16), SOAK_RSS_TOLERANCE_MB (96),
 * SOAK_HEAP_TOLERANCE_MB (32), SOAK_HANDLE_TOLERANCE (2).
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import { performance } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request, type TestResponse } from "../helpers/http.js";
import { introspectionAuthConfig, startAuthServer, type AuthServer } from "../helpers/oidc.js";
import { RedisServer, waitFor } from "../helpers/redis-server.js";

const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const LOOPS = Number(process.env.SOAK_LOOPS ?? 16);
const RSS_TOLERANCE_MB = Number(process.env.SOAK_RSS_TOLERANCE_MB ?? 96);
const HEAP_TOLERANCE_MB = Number(process.env.SOAK_HEAP_TOLERANCE_MB ?? 32);
const HANDLE_TOLERANCE = Number(process.env.SOAK_HANDLE_TOLERANCE ?? 2);
/** Introspection timeout (ms); also how long a failed lookup may outlive an outage. */
const INTROSPECTION_TIMEOUT_MS = 1000;
const MB = 1024 * 1024;
/** Share of calls that use a never-seen valid token. */
const FRESH_SHARE = 0.005;

type Kind = "warm" | "fresh" | "invalid" | "malformed" | "missing" | "write";

/** Statuses each kind may get whatever happens; 503 is judged separately. */
const ALLOWED: Record<Kind, readonly number[]> = {
  warm: [200, 429],
  fresh: [200, 429],
  invalid: [401, 429],
  malformed: [400, 429],
  missing: [401, 429],
  write: [200, 429],
};

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** Outages of the authorization server: [stop began, start finished] (performance.now ms). */
const authOutages: Array<[number, number]> = [];
const counts = new Map<string, number>();
/** Violation message -> occurrences. */
const violations = new Map<string, number>();
let requests = 0;

function count(kind: Kind, clean: boolean, res: TestResponse): void {
  const anonymous = res.status === 429 && res.headers["x-ratelimit-resource"] === "anonymous";
  const key = `${kind}${clean ? "" : "*"}\t${res.status}${anonymous ? " anonymous" : ""}`;
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

function violation(message: string): void {
  violations.set(message, (violations.get(message) ?? 0) + 1);
}

function authDownDuring(startMs: number, endMs: number): boolean {
  const from = startMs - INTROSPECTION_TIMEOUT_MS;
  return authOutages.some(([down, up]) => down <= endMs && (up === Infinity || up >= from));
}

/** Valid tokens: `warm` ones authenticated at least once, `fresh` ones never yet. */
class TokenPool {
  readonly warm: string[] = [];
  readonly fresh: string[];
  constructor(tokens: string[]) {
    this.fresh = tokens;
  }
  takeFresh(): string | undefined {
    return this.fresh.pop();
  }
  settle(token: string, authenticated: boolean): void {
    (authenticated ? this.warm : this.fresh).push(token);
  }
}

function pick<T>(items: readonly T[]): T {
  return items[Math.floor(Math.random() * items.length)]!;
}

/**
 * One client loop: its own IP (via X-Forwarded-For, trust_proxy 1) and its own mix. Even loops are
 * clean clients (valid tokens only, so their IP's anonymous budget is never spent); odd loops
 * mostly send garbage, and their valid tokens may meet the anonymous limit when an entry needs
 * re-introspection (SPEC §3: only a token already cached bypasses a spent anonymous budget).
 */
async function clientLoop(
  id: number,
  gw: TestGateway,
  agent: http.Agent,
  pool: TokenPool,
  running: () => boolean,
): Promise<void> {
  const ip = `10.0.${id >> 8}.${id & 255}`;
  const clean = id % 2 === 0;
  const kinds: Kind[] = clean
    ? ["warm", "warm", "warm", "warm", "warm", "write"]
    : ["invalid", "invalid", "malformed", "missing", "warm"];
  while (running()) {
    // Never-seen tokens are rare, so the pool lasts through every outage of the run.
    let kind = Math.random() < FRESH_SHARE ? "fresh" : pick(kinds);
    let token: string | undefined;
    if (kind === "fresh") token = pool.takeFresh();
    if (kind === "warm" || (kind === "fresh" && token === undefined)) {
      kind = pool.warm.length > 0 ? "warm" : "missing";
      if (kind === "warm") token = pick(pool.warm);
    }
    const headers: Record<string, string> = { "x-forwarded-for": ip };
    if (kind === "warm" || kind === "fresh" || kind === "write") {
      token ??= pool.warm.length > 0 ? pick(pool.warm) : undefined;
      if (token === undefined) kind = "missing";
      else headers.authorization = `Bearer ${token}`;
    }
    if (kind === "invalid") headers.authorization = `Bearer ${randomBytes(18).toString("base64url")}`;
    if (kind === "malformed") headers.authorization = pick(["Basic dXNlcjpwYXNz", "Bearer", "Bearer a b"]);
    const started = performance.now();
    let res: TestResponse;
    try {
      res = await request(`${gw.url}/v1/items/${id}`, {
        method: kind === "write" ? "POST" : "GET",
        headers,
        body: kind === "write" ? JSON.stringify({ n: requests }) : undefined,
        agent,
      });
    } catch (err) {
      violation(`${kind}: request failed: ${(err as Error).message}`);
      continue;
    }
    const ended = performance.now();
    requests += 1;
    count(kind, clean, res);
    judge(kind, clean, res, started, ended);
    if (kind === "fresh") {
      const authenticated =
        res.status === 200 || (res.status === 429 && res.headers["x-ratelimit-resource"] !== "anonymous");
      pool.settle(token!, authenticated);
    }
  }
}

function judge(kind: Kind, clean: boolean, res: TestResponse, startedMs: number, endedMs: number): void {
  if (ALLOWED[kind].includes(res.status)) {
    const anonymous = res.headers["x-ratelimit-resource"] === "anonymous";
    if (clean && res.status === 429 && anonymous) violation(`${kind}: anonymous 429 on a clean IP`);
    return;
  }
  if (res.status === 503 && (kind === "fresh" || kind === "invalid")) {
    const message = (JSON.parse(res.body) as { error: { message: string } }).error.message;
    if (message !== "Authentication service unavailable") {
      violation(`${kind}: 503 "${message}"`);
    } else if (!authDownDuring(startedMs, endedMs)) {
      violation(`${kind}: 503 while the authorization server was up`);
    }
    return;
  }
  violation(`${kind}: unexpected ${res.status} ${res.body.slice(0, 120)}`);
}

interface Snapshot {
  rssMb: number;
  heapMb: number;
  handles: Map<string, number>;
}

function snapshot(): Snapshot {
  gc();
  gc();
  const mem = process.memoryUsage();
  const handles = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo()) handles.set(type, (handles.get(type) ?? 0) + 1);
  return { rssMb: mem.rss / MB, heapMb: mem.heapUsed / MB, handles };
}

function totalHandles(s: Snapshot): number {
  let n = 0;
  for (const v of s.handles.values()) n += v;
  return n;
}

async function metricValue(gw: TestGateway, name: string): Promise<number> {
  const text = (await request(`${gw.adminUrl}/metrics`)).body;
  const line = text.split("\n").find((l) => l.startsWith(name));
  return line === undefined ? NaN : Number(line.split(" ").at(-1));
}

/** Runs the loops until `stop()` is called; resolves when every loop has finished its request. */
function traffic(gw: TestGateway, agent: http.Agent, pool: TokenPool) {
  let on = true;
  const loops = Array.from({ length: LOOPS }, (_, i) => clientLoop(i + 1, gw, agent, pool, () => on));
  return {
    async stop() {
      on = false;
      await Promise.all(loops);
    },
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const redis = await RedisServer.start();
  const auth: AuthServer = await startAuthServer({ tokenTtlS: 3600 });
  const upstream = await listen((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"ok":true}');
    });
  });
  const base = testConfig(upstream.url);
  const gw = await startGateway({
    ...base,
    trust_proxy: 1,
    upstreams: { docs: { url: upstream.url, timeout_ms: 5000, keep_alive_ms: 1000 } },
    // Short freshness so tokens are re-introspected during outages; stale-if-error covers them.
    auth: introspectionAuthConfig(
      auth,
      { max_entries: 50_000, max_ttl_s: 3, negative_ttl_s: 2, stale_if_error_s: 3600 },
      INTROSPECTION_TIMEOUT_MS,
    ),
    rate_limits: {
      store: { redis: { url: redis.url, key_prefix: `soak-${process.pid}`, command_timeout_ms: 100 } },
      failure_mode: "open",
      classes: {
        read: { match: { methods: ["GET", "HEAD"] }, windows: [{ limit: 400, window_s: 1 }] },
        write: {
          match: { methods: ["POST"] },
          algorithm: "sliding_log",
          windows: [{ limit: 50, window_s: 1 }],
        },
      },
      anonymous: { windows: [{ limit: 40, window_s: 2 }] },
    },
  });
  const pool = new TokenPool(await issueTokens(auth, 100 + SECONDS * 15));
  // A few warm tokens before the loops start, so clean loops always have one.
  for (let i = 0; i < 10; i++) {
    const token = pool.takeFresh()!;
    const res = await request(`${gw.url}/v1/items/0`, { headers: { authorization: `Bearer ${token}` } });
    pool.settle(token, res.status === 200);
  }
  const agent = new http.Agent({ keepAlive: true, maxSockets: LOOPS * 2 });

  const warmS = Math.max(5, SECONDS * 0.15);
  const finalS = Math.max(5, SECONDS * 0.2);
  const chaosS = Math.max(10, SECONDS - warmS - finalS);
  const t0 = performance.now();
  const at = (s: number) => sleep(Math.max(0, t0 + s * 1000 - performance.now()));
  const events: string[] = [];
  const log = (what: string) => {
    events.push(`${((performance.now() - t0) / 1000).toFixed(1).padStart(6)} s  ${what}`);
  };

  // Warm-up, then a quiet baseline.
  let run = traffic(gw, agent, pool);
  await at(warmS);
  await run.stop();
  await settle(agent);
  const baseline = snapshot();
  log(`baseline: ${requests} requests`);

  run = traffic(gw, agent, pool);
  const chaos: Array<[number, string, () => Promise<void> | void]> = [
    [0.0, "redis killed", () => redis.stop()],
    [0.15, "redis restarted", () => redis.start()],
    [0.3, "auth server stopped", () => stopAuth(auth)],
    [0.45, "auth server restarted", () => startAuth(auth)],
    [
      0.6,
      "redis killed + auth server stopped",
      async () => void (await Promise.all([redis.stop(), stopAuth(auth)])),
    ],
    [
      0.75,
      "redis + auth server restarted",
      async () => void (await Promise.all([redis.start(), startAuth(auth)])),
    ],
    [0.85, "redis hung (SIGSTOP)", () => redis.pause()],
    [0.95, "redis resumed", () => redis.resume()],
  ];
  for (const [fraction, what, action] of chaos) {
    await at(warmS + fraction * chaosS);
    await action();
    log(what);
  }
  await at(warmS + chaosS + finalS);
  await run.stop();
  log(`traffic stopped: ${requests} requests`);

  // Quiet again: the store must be back on Redis and the handles back at the baseline.
  await waitFor(
    "limit store back on redis",
    async () => (await metricValue(gw, "gateway_ratelimit_store_degraded")) === 0,
    10_000,
  ).catch(() => violation("limit store still degraded at the end"));
  await settle(agent);
  let end = snapshot();
  await waitFor(
    "handles back at the baseline",
    async () => {
      end = snapshot();
      return totalHandles(end) <= totalHandles(baseline) + HANDLE_TOLERANCE;
    },
    10_000,
  ).catch(() =>
    violation(
      `active handles ${totalHandles(end)} > baseline ${totalHandles(baseline)} + ${HANDLE_TOLERANCE}`,
    ),
  );
  if (end.rssMb > baseline.rssMb + RSS_TOLERANCE_MB) {
    violation(`RSS grew from ${baseline.rssMb.toFixed(0)} to ${end.rssMb.toFixed(0)} MB`);
  }
  if (end.heapMb > baseline.heapMb + HEAP_TOLERANCE_MB) {
    violation(`heap after GC grew from ${baseline.heapMb.toFixed(0)} to ${end.heapMb.toFixed(0)} MB`);
  }

  printSummary(events, baseline, end, (performance.now() - t0) / 1000);
  agent.destroy();
  await gw.close();
  await closeServer(upstream.server);
  await auth.stop();
  await redis.destroy();
  if (violations.size > 0) {
    console.error("\nSOAK FAILED");
    for (const [v, n] of violations) console.error(`  ${String(n).padStart(6)} x ${v}`);
    process.exit(1);
  }
  console.log("\nSOAK PASSED");
  process.exit(0);
}

/** `n` real tokens, 20 requests at a time. */
async function issueTokens(auth: AuthServer, n: number): Promise<string[]> {
  const tokens: string[] = [];
  while (tokens.length < n) {
    const batch = Math.min(20, n - tokens.length);
    tokens.push(...(await Promise.all(Array.from({ length: batch }, () => auth.issueToken("read")))));
  }
  return tokens;
}

async function stopAuth(auth: AuthServer): Promise<void> {
  authOutages.push([performance.now(), Infinity]);
  await auth.stop();
}

async function startAuth(auth: AuthServer): Promise<void> {
  await auth.start();
  authOutages.at(-1)![1] = performance.now();
}

/** Closes the client's idle keep-alive sockets and waits for the gateway to see them go. */
async function settle(agent: http.Agent): Promise<void> {
  for (const sockets of Object.values(agent.freeSockets)) for (const s of sockets ?? []) s.destroy();
  await new Promise<void>((resolve) => setImmediate(resolve));
}

function printSummary(events: string[], start: Snapshot, end: Snapshot, elapsedS: number): void {
  console.log(
    `\nSoak: ${SECONDS} s requested, ${elapsedS.toFixed(1)} s run, ${LOOPS} loops, ${requests} requests`,
  );
  console.log("\nEvents");
  for (const e of events) console.log(`  ${e}`);
  console.log("\nStatuses by kind of call (* = from a loop that also sends garbage)");
  const rows = [...counts.entries()].sort(([a], [b]) => a.localeCompare(b));
  console.log(`  ${"kind".padEnd(11)} ${"status".padEnd(14)} ${"count".padStart(8)}`);
  for (const [key, n] of rows) {
    const [kind, status] = key.split("\t");
    console.log(`  ${kind!.padEnd(11)} ${status!.padEnd(14)} ${String(n).padStart(8)}`);
  }
  console.log("\nResources (at quiet moments, after GC)");
  console.log(`  ${"".padEnd(22)} ${"baseline".padStart(10)} ${"end".padStart(10)}`);
  console.log(
    `  ${"RSS (MB)".padEnd(22)} ${start.rssMb.toFixed(1).padStart(10)} ${end.rssMb.toFixed(1).padStart(10)}`,
  );
  console.log(
    `  ${"heap used (MB)".padEnd(22)} ${start.heapMb.toFixed(1).padStart(10)} ${end.heapMb.toFixed(1).padStart(10)}`,
  );
  console.log(
    `  ${"active handles".padEnd(22)} ${String(totalHandles(start)).padStart(10)} ${String(totalHandles(end)).padStart(10)}`,
  );
  const types = new Set([...start.handles.keys(), ...end.handles.keys()]);
  for (const t of [...types].sort()) {
    const a = start.handles.get(t) ?? 0;
    const b = end.handles.get(t) ?? 0;
    console.log(`    ${t.padEnd(20)} ${String(a).padStart(10)} ${String(b).padStart(10)}`);
  }
}

main().catch((err: unknown) => {
  console.error("soak crashed:", err);
  process.exit(2);
});
