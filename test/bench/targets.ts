/**
 * What the benchmark starts: the upstream, the two bare proxies, `redis-server`, the RFC 7662
 * server, and gateways from the built `dist/` (so tsx is not on the measured path), each a child
 * process on the server core with ports chosen up front.
 */
import { execFile } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { stringify } from "yaml";
import { freePorts } from "../helpers/child-gateway.js";
import { prng } from "../helpers/prng.js";
import { gcNodeArgs } from "./gc-window.js";
import { LOAD_CORE, spawnServer, waitForPort, type Child } from "./procs.js";

const exec = promisify(execFile);

/** Repository root. */
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The built gateway entry point; BENCH_GATEWAY_MAIN points at another build (e.g. a patched copy). */
export const GATEWAY_MAIN = process.env.BENCH_GATEWAY_MAIN ?? path.join(ROOT, "dist/gateway/main.js");
const HERE = fileURLToPath(new URL(".", import.meta.url));

/** A started HTTP target. */
export interface Target {
  readonly child: Child;
  /** Base URL (no trailing slash). */
  readonly url: string;
}

/** Starts a TypeScript child entry of this directory through tsx (on the server core by default). */
async function startTsChild(
  name: string,
  file: string,
  args: string[],
  core?: string,
): Promise<Target & { port: number }> {
  const [port] = (await freePorts(1)) as [number];
  const child = spawnServer(
    name,
    process.execPath,
    [...gcNodeArgs(), "--import", "tsx", path.join(HERE, file), String(port), ...args],
    {
      cwd: ROOT,
      ...(core === undefined ? {} : { core }),
    },
  );
  await waitForPort(child, port);
  return { child, url: `http://127.0.0.1:${port}`, port };
}

/** (a) the Node upstream, where nginx is missing (`nginx-upstream.ts`), on the load core. */
export function startUpstream(): Promise<Target> {
  return startTsChild("upstream", "upstream.ts", [], LOAD_CORE);
}

/** (h) a bare http-proxy 1.18 server, (b) a bare http-proxy-3 server. */
export function startBareProxy(upstreamUrl: string, flavour: "http-proxy" | "http-proxy-3"): Promise<Target> {
  return startTsChild(`bare-${flavour}`, "bare-proxy.ts", [upstreamUrl, flavour]);
}

/** (fy) the Fastify peer: `@fastify/http-proxy` and `@fastify/rate-limit` on Redis. */
export function startFastifyPeer(upstreamUrl: string, redisUrl: string): Promise<Target> {
  return startTsChild("fastify-peer", "fastify-peer.ts", [upstreamUrl, redisUrl]);
}

/** The TLS cells' reference: a bare Node TLS proxy on undici, HTTP/1.1 or HTTP/2. */
export async function startBareTlsProxy(
  upstreamUrl: string,
  mode: "h1" | "h2",
  certFile: string,
  keyFile: string,
): Promise<Target> {
  const t = await startTsChild(`bare-tls-${mode}`, "bare-tls-proxy.ts", [
    upstreamUrl,
    mode,
    certFile,
    keyFile,
  ]);
  return { child: t.child, url: `https://127.0.0.1:${t.port}` };
}

/** (b2) the undici prototype. */
export function startUndiciProxy(upstreamUrl: string, mode: "dispatch" | "stream"): Promise<Target> {
  return startTsChild(`undici-${mode}`, "undici-proxy-prototype.ts", [upstreamUrl, mode]);
}

/** The OTLP/HTTP collector stand-in, on the load core (a collector has its own host). */
export async function startCollectorSink(): Promise<Target & { endpoint: string }> {
  const t = await startTsChild("collector-sink", "collector-sink.ts", [], LOAD_CORE);
  return { ...t, endpoint: `${t.url}/v1/traces` };
}

/** A redis-server on a free port, persistence off (never the machine's 6379). */
export interface BenchRedis {
  readonly child: Child;
  readonly port: number;
  readonly url: string;
  /** `INFO commandstats` as `command -> calls`. */
  commandCalls(): Promise<Map<string, number>>;
}

/**
 * Starts `redis-server` on the load core: in production Redis has its own host, so its CPU must not
 * be charged to the gateway's core (the report shows it per request, measured from /proc).
 */
export async function startRedis(dir: string): Promise<BenchRedis> {
  const [port] = (await freePorts(1)) as [number];
  const child = spawnServer(
    "redis-server",
    "redis-server",
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      "--dir",
      dir,
      "--logfile",
      path.join(dir, "redis.log"),
    ],
    { core: LOAD_CORE },
  );
  await waitForPort(child, port);
  return {
    child,
    port,
    url: `redis://127.0.0.1:${port}`,
    async commandCalls() {
      const { stdout } = await exec("redis-cli", ["-p", String(port), "INFO", "commandstats"], {
        timeout: 5000,
      });
      const out = new Map<string, number>();
      for (const m of stdout.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out.set(m[1]!, Number(m[2]));
      return out;
    },
  };
}

/** The identity provider (cold runs, warm JWT cell) and the tokens it issued. */
export interface BenchAuthServer {
  readonly child: Child;
  readonly introspectionUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Issuer and audience of its JWT access tokens. */
  readonly issuer: string;
  readonly audience: string;
  /** Opaque tokens, one per line. */
  readonly tokensFile: string;
  readonly issued: number;
  readonly issueMs: number;
  /** JWT access tokens, one per line. */
  readonly jwtFile: string;
  readonly jwtIssued: number;
  readonly jwtIssueMs: number;
  /** One more JWT, in neither file (the warm JWT cell's). */
  readonly warmJwt: string;
}

/** Starts the IdP child, which issues `count` opaque tokens and `jwtCount` JWTs before it answers. */
export async function startAuthServer(
  dir: string,
  count: number,
  jwtCount: number,
  timeoutMs: number,
): Promise<BenchAuthServer> {
  const [port] = (await freePorts(1)) as [number];
  const tokensFile = path.join(dir, "cold-tokens.txt");
  const child = spawnServer(
    "oidc-provider",
    process.execPath,
    [
      "--import",
      "tsx",
      path.join(HERE, "auth-server.ts"),
      String(port),
      tokensFile,
      String(count),
      String(jwtCount),
    ],
    { stdout: "pipe", cwd: ROOT },
  );
  const line = await new Promise<string>((resolve, reject) => {
    let buf = "";
    const timer = setTimeout(
      () => reject(new Error(`oidc-provider: no tokens within ${timeoutMs} ms`)),
      timeoutMs,
    );
    child.proc.stdout!.setEncoding("utf8").on("data", (s: string) => {
      buf += s;
      const nl = buf.indexOf("\n");
      if (nl >= 0) {
        clearTimeout(timer);
        resolve(buf.slice(0, nl));
      }
    });
    void child.exited.then(() => reject(new Error(`oidc-provider exited: ${child.stderr()}`)));
  });
  const info = JSON.parse(line) as Omit<BenchAuthServer, "child" | "tokensFile" | "jwtFile">;
  return { child, tokensFile, jwtFile: `${tokensFile}.jwt`, ...info };
}

/** Gateway variants of the table. */
export interface GatewayVariant {
  /**
   * SPEC §21 usage operations on: top callers (`rate_limits.top_callers`, else off) and a webhook
   * with two thresholds (never crossed: the limits are {@link HUGE}), its secret in this file.
   */
  usageOps?: { secretFile: string };
  redisUrl?: string;
  keyPrefix?: string;
  ietf?: boolean;
  /** Adds a shadow class matching `GET /v1/user` (two windows). */
  shadow?: boolean;
  /**
   * Adds plans (`free`, `pro`), a plan claim, a default plan and 1000 consumers; the bench token's
   * `sub` is the last one, on `pro`, whose `read` limit is {@link PRO_READ_LIMIT}.
   */
  plans?: boolean;
  tokensFile?: string;
  introspection?: { url: string; clientId: string; clientSecret: string };
  /** Adds `auth.jwt` (in front of the introspection or static source). */
  jwt?: { issuer: string; audience: string };
  /** Extra `node` flags (profiling). */
  nodeArgs?: string[];
  /** Another `node` binary (the runtime comparison, BENCH_NODES); this process's by default. */
  node?: string;
  /** Working directory of the child (where `--cpu-prof` writes by default). */
  cwd?: string;
  /** Another build's `main.js` (A/B against a patched copy). */
  main?: string;
  /** TLS on the API listener (`listen.tls`), HTTP/2 offered by ALPN unless `http2` is false. */
  tls?: { certFile: string; keyFile: string; http2?: boolean };
  /** `tracing` (SPEC §13): spans to this OTLP/HTTP endpoint, new traces sampled at `sampleRatio`. */
  tracing?: { endpoint: string; sampleRatio: number };
  /**
   * The `read` class admits this many calls per second (one window of 1 s): the bench's one
   * identity goes far over it (the over-limit cell).
   */
  readPerSecond?: number;
  /**
   * The `read` class has a second window, never reached: `calendar` a calendar one (`period:
   * month`, SPEC §19), `sliding` one of 86400 s (what the calendar window's cost compares with).
   */
  secondWindow?: "calendar" | "sliding";
  /**
   * The `read` class has a budget shared by an organisation (SPEC §22, `claim:org_id`, never
   * reached): the bench token carries `org_id` (see {@link writeWarmTokens}), so every call counts
   * in its own window and the organisation's, in the same one script call.
   */
  orgBudget?: boolean;
  /**
   * The `read` class's `cost` (SPEC §22): units a call spends in every window it counts in (the
   * limits are {@link HUGE}, never reached); the class's default of 1 when unset.
   */
  cost?: number;
  /** `workers` (SPEC §15); the bench measures the whole process group's CPU. */
  workers?: number;
  /** `taskset -c` list of the gateway's process (default the server core; "0,1" unpins it). */
  core?: string;
  /**
   * A decision listener (SPEC §23) beside the API listener; the target's URL is then
   * `<decision listener>/decide`, so `<url>/v1/user` asks about `GET /v1/user` as Envoy's
   * `ext_authz` with `path_prefix: /decide` does.
   */
  decision?: boolean;
}

/** Limits no benchmark reaches: every call is admitted and counted. */
const HUGE = 1_000_000_000;
/** The `pro` plan's `read` limit in the plans cell: the headers show the plan was applied. */
export const PRO_READ_LIMIT = HUGE - 1;

/** `rate_limits` keys of the plans cell: 1000 consumers, the bench user (`sub`) last, on `pro`. */
function plansConfig(): Record<string, unknown> {
  const consumers: Record<string, string>[] = [];
  for (let i = 0; i < 999; i++) {
    consumers.push(
      i % 3 === 0 ? { client_id: `partner-${i}`, plan: "pro" } : { sub: `consumer-${i}`, plan: "pro" },
    );
  }
  consumers.push({ sub: "bench-user", plan: "pro" });
  return {
    plan_claim: "plan",
    default_plan: "free",
    plans: {
      free: {},
      pro: {
        read: [{ limit: PRO_READ_LIMIT, window_s: 3600 }],
        write: [{ limit: PRO_READ_LIMIT, window_s: 3600 }],
      },
    },
    consumers,
  };
}

/** The gateway's YAML for a variant. */
export function gatewayConfig(
  upstreamUrl: string,
  ports: { apiPort: number; adminPort: number; decisionPort?: number },
  v: GatewayVariant,
): Record<string, unknown> {
  const classes: Record<string, unknown> = {};
  if (v.shadow) {
    classes.user = {
      match: { methods: ["GET"], paths: ["/v1/user"] },
      mode: "shadow",
      windows: [
        { limit: HUGE, window_s: 1 },
        { limit: HUGE, window_s: 3600 },
      ],
    };
  }
  classes.read = {
    match: { methods: ["GET", "HEAD"] },
    windows: [
      { limit: v.readPerSecond ?? HUGE, window_s: v.readPerSecond === undefined ? 3600 : 1 },
      ...(v.secondWindow === "calendar" ? [{ limit: HUGE, period: "month" }] : []),
      ...(v.secondWindow === "sliding" ? [{ limit: HUGE, window_s: 86_400 }] : []),
    ],
    ...(v.orgBudget === true
      ? { budgets: [{ key: "claim:org_id", windows: [{ limit: HUGE, window_s: 3600 }] }] }
      : {}),
    ...(v.cost === undefined ? {} : { cost: v.cost }),
  };
  classes.write = {
    match: { methods: ["POST", "PUT", "PATCH", "DELETE"] },
    windows: [{ limit: HUGE, window_s: 3600 }],
  };
  const cache = { max_entries: 100_000, max_ttl_s: 3600 };
  const jwt =
    v.jwt === undefined
      ? {}
      : { jwt: { issuer: v.jwt.issuer, audience: [v.jwt.audience], timeout_ms: 5000, cache } };
  return {
    listen: {
      host: "127.0.0.1",
      port: ports.apiPort,
      grace_ms: 2000,
      ...(v.tls === undefined
        ? {}
        : { tls: { cert_file: v.tls.certFile, key_file: v.tls.keyFile }, http2: v.tls.http2 ?? true }),
    },
    ...(v.workers === undefined ? {} : { workers: v.workers }),
    ...(ports.decisionPort === undefined
      ? {}
      : { decision: { listen: { host: "127.0.0.1", port: ports.decisionPort } } }),
    admin: { host: "127.0.0.1", port: ports.adminPort },
    upstreams: { api: { url: upstreamUrl, timeout_ms: 30_000 } },
    routes: [{ prefix: "/v1", upstream: "api" }],
    auth:
      v.introspection !== undefined
        ? {
            realm: "api",
            ...jwt,
            introspection: {
              url: v.introspection.url,
              client_id: v.introspection.clientId,
              client_secret: v.introspection.clientSecret,
              timeout_ms: 5000,
              cache,
            },
          }
        : { realm: "api", ...jwt, static: { tokens_file: v.tokensFile!, cache } },
    rate_limits: {
      ...(v.redisUrl !== undefined
        ? {
            store: {
              redis: { url: v.redisUrl, key_prefix: v.keyPrefix ?? "bench", command_timeout_ms: 1000 },
            },
          }
        : {}),
      classes,
      anonymous: { windows: [{ limit: HUGE, window_s: 3600 }] },
      ...(v.plans ? plansConfig() : {}),
      top_callers: v.usageOps !== undefined,
    },
    ...(v.usageOps === undefined
      ? {}
      : {
          notifications: {
            webhooks: [{ url: upstreamUrl, secret_file: v.usageOps.secretFile, thresholds: [0.8, 1] }],
          },
        }),
    headers: { ietf: v.ietf ?? false },
    ...(v.tracing === undefined
      ? {}
      : { tracing: { endpoint: v.tracing.endpoint, sample_ratio: v.tracing.sampleRatio } }),
    log: { level: "info" },
  };
}

/** A gateway child. */
export interface GatewayTarget extends Target {
  readonly adminUrl: string;
  /** Samples of the admin `/metrics` page. */
  metrics(): Promise<string>;
}

/**
 * Runs `node dist/gateway/main.js start --config <dir>/<name>.yaml`; stdout (the access log) goes
 * to /dev/null, so the gateway pays for formatting and writing each line but nobody reads them.
 */
export async function startGateway(
  name: string,
  dir: string,
  upstreamUrl: string,
  v: GatewayVariant,
): Promise<GatewayTarget> {
  const main = v.main ?? GATEWAY_MAIN;
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`npm run build\` first`);
  const [apiPort, adminPort, decisionPort] = (await freePorts(v.decision ? 3 : 2)) as [
    number,
    number,
    number?,
  ];
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(file, stringify(gatewayConfig(upstreamUrl, { apiPort, adminPort, decisionPort }, v)));
  const child = spawnServer(
    name,
    v.node ?? process.execPath,
    [...gcNodeArgs(), ...(v.nodeArgs ?? []), main, "start", "--config", file],
    { cwd: v.cwd ?? ROOT, ...(v.core === undefined ? {} : { core: v.core }) },
  );
  await waitForPort(child, adminPort);
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  return {
    child,
    url:
      decisionPort !== undefined
        ? `http://127.0.0.1:${decisionPort}/decide`
        : `${v.tls === undefined ? "http" : "https"}://127.0.0.1:${apiPort}`,
    adminUrl,
    metrics: () => get(`${adminUrl}/metrics`).then((r) => r.body),
  };
}

/** One GET without keep-alive; resolves with status, headers and body. */
export function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent: false, timeout: 5000 }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on("error", reject);
  });
}

/** Sum of every sample of `name` (any labels) in a Prometheus text page, optionally filtered. */
export function metricSum(page: string, name: string, labelFilter?: string): number {
  let sum = 0;
  for (const line of page.split("\n")) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== "{" && rest[0] !== " ") continue;
    if (labelFilter !== undefined && !rest.includes(labelFilter)) continue;
    sum += Number(line.slice(line.lastIndexOf(" ") + 1)) || 0;
  }
  return sum;
}

/** Writes the 10k-token static file: `bench-<i>` → `sub: user-<i>`. */
export function writeChurnTokens(dir: string, n: number): { tokensFile: string; listFile: string } {
  const tokensFile = path.join(dir, "churn-tokens.yaml");
  const listFile = path.join(dir, "churn-tokens.txt");
  const yaml: string[] = [];
  const list: string[] = [];
  for (let i = 0; i < n; i++) {
    const t = `bench-churn-${i.toString(36).padStart(4, "0")}-token`;
    yaml.push(`${t}: { sub: user-${i}, client_id: bench, scope: read }`);
    list.push(t);
  }
  writeFileSync(tokensFile, yaml.join("\n") + "\n");
  writeFileSync(listFile, list.join("\n") + "\n");
  return { tokensFile, listFile };
}

/**
 * Writes the warm-run static file: `token`, and `longToken` (another identity) when given, the
 * opaque token as long as a JWT that cell dl pairs with dj.
 */
export function writeWarmTokens(dir: string, token: string, longToken?: string, orgId?: string): string {
  const file = path.join(dir, orgId === undefined ? "warm-tokens.yaml" : "warm-tokens-org.yaml");
  const org = orgId === undefined ? "" : `, org_id: ${orgId}`;
  let text = `${token}: { sub: bench-user, client_id: bench, scope: read${org} }\n`;
  if (longToken !== undefined)
    text += `${longToken}: { sub: bench-user-long, client_id: bench, scope: read }\n`;
  writeFileSync(file, text);
  return file;
}

/**
 * An opaque token of `length` base64url characters (the alphabet of a JWT's), deterministic: the
 * same bytes in every run.
 */
export function longOpaqueToken(length: number): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const next = prng(0x2545f491);
  let out = "";
  for (let i = 0; i < length; i++) out += alphabet[Math.floor(next() * 64)];
  return out;
}

/** Short description of the machine for the report. */
export function machine(): string {
  const cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? "unknown CPU";
  const cores = readFileSync("/proc/cpuinfo", "utf8").match(/^processor\s*:/gm)?.length ?? 0;
  const memKb = Number(/^MemTotal:\s+(\d+)/m.exec(readFileSync("/proc/meminfo", "utf8"))?.[1] ?? 0);
  return `${cores} x ${cpu}, ${Math.round(memKb / 1024 / 1024)} GB RAM, Node ${process.version}`;
}
