/**
 * Runs the real `gateway start` command in a child process (through tsx, so no build is needed):
 * the only way to test signals, exit codes and the gateway's own RSS. Ports are picked up front and
 * written into a temporary config, since a child bound to port 0 cannot be discovered from outside.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { freePort } from "./redis-server.js";

/** Repository root (the child's working directory). */
export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** `n` distinct free TCP ports on 127.0.0.1, from the test process's own range (see `freePort`). */
export async function freePorts(n: number): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < n; i++) ports.push(await freePort());
  return ports;
}

/** One parsed stdout line of the child (pino JSON), or `{ raw }` when it is not JSON. */
export type LogLine = Record<string, unknown>;

/** A gateway child process. */
export interface ChildGateway {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly apiPort: number;
  readonly adminPort: number;
  readonly url: string;
  readonly adminUrl: string;
  /** The config file the child reads (rewrite it, then `signal("SIGHUP")`). */
  readonly configFile: string;
  /** Every stdout line so far, parsed. */
  readonly lines: LogLine[];
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Rewrites the config file with `config` (YAML) or raw `text`. */
  writeConfig(config: Record<string, unknown> | string): void;
  signal(sig: NodeJS.Signals): void;
  /** Resolves with the first stdout line `match` accepts (already seen lines included). */
  waitForLine(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** Resolves when the child has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resident set size of the child (bytes), from /proc. */
  rssBytes(): number;
  /** TCP ports the child has a listening socket on, from /proc (Linux). */
  listeningPorts(): Set<number>;
  /** Kills the child if still running and removes its temporary directory. */
  dispose(): Promise<void>;
}

/**
 * Spawns `node --import tsx gateway/main.ts start --config <tmp>/gateway.yaml`.
 * @param build - builds the config from the chosen API and admin ports
 * @param options.readyTimeoutMs - how long the child has to bind both listeners
 * @param options.configVia - `env`: pass the file as `GATEWAY_CONFIG` instead of `--config`
 * @param options.place - lays the config out itself in the temporary directory (a ConfigMap-shaped
 *   tree of symbolic links) and returns the path the child is to read; `writeConfig` still writes
 *   `<tmp>/gateway.yaml`
 */
export async function spawnGateway(
  build: (ports: { apiPort: number; adminPort: number }) => Record<string, unknown>,
  options: {
    readyTimeoutMs?: number;
    env?: NodeJS.ProcessEnv;
    nodeArgs?: string[];
    configVia?: "flag" | "env";
    place?: (dir: string, yaml: string) => string;
  } = {},
): Promise<ChildGateway> {
  const [apiPort, adminPort] = (await freePorts(2)) as [number, number];
  const dir = mkdtempSync(path.join(tmpdir(), "gateway-child-"));
  const configFile = path.join(dir, "gateway.yaml");
  const writeConfig = (config: Record<string, unknown> | string) =>
    writeFileSync(configFile, typeof config === "string" ? config : stringify(config));
  const built = build({ apiPort, adminPort });
  const childConfigFile = options.place?.(dir, stringify(built)) ?? configFile;
  if (options.place === undefined) writeConfig(built);

  const viaEnv = options.configVia === "env";
  const child = spawn(
    process.execPath,
    [
      ...(options.nodeArgs ?? []),
      ...["--import", "tsx", "gateway/main.ts", "start"],
      ...(viaEnv ? [] : ["--config", childConfigFile]),
    ],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, ...options.env, ...(viaEnv ? { GATEWAY_CONFIG: childConfigFile } : {}) },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const lines: LogLine[] = [];
  const waiters = new Set<{ match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }>();
  let partial = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    partial += chunk;
    let nl: number;
    while ((nl = partial.indexOf("\n")) >= 0) {
      const text = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      let line: LogLine;
      try {
        line = JSON.parse(text) as LogLine;
      } catch {
        line = { raw: text };
      }
      lines.push(line);
      for (const w of waiters) {
        if (!w.match(line)) continue;
        waiters.delete(w);
        w.resolve(line);
      }
    }
  });
  let err = "";
  child.stderr!.setEncoding("utf8").on("data", (c: string) => (err += c));

  const waitForLine = (match: (l: LogLine) => boolean, timeoutMs = 10_000): Promise<LogLine> => {
    const seen = lines.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const w = { match, resolve: (l: LogLine) => (clearTimeout(t), resolve(l)) };
      const t = setTimeout(() => {
        waiters.delete(w);
        reject(new Error(`no matching log line within ${timeoutMs} ms; stderr: ${err}`));
      }, timeoutMs);
      waiters.add(w);
    });
  };

  const gw: ChildGateway = {
    child,
    pid: child.pid!,
    apiPort,
    adminPort,
    url: `http://127.0.0.1:${apiPort}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    configFile,
    lines,
    stderr: () => err,
    writeConfig,
    signal: (sig) => void child.kill(sig),
    waitForLine,
    exited,
    rssBytes: () => {
      const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"));
      return m === null ? 0 : Number(m[1]) * 1024;
    },
    listeningPorts: () => listeningPortsOf(child.pid!),
    async dispose() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGKILL");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await waitUntilListening(adminPort, exited, options.readyTimeoutMs ?? 20_000);
  } catch (e) {
    await gw.dispose();
    throw new Error(`${(e as Error).message}; stderr: ${err}`);
  }
  return gw;
}

/** Ports of the LISTEN sockets (`/proc/net/tcp*`, state 0A) whose inode is one of `pid`'s fds. */
export function listeningPortsOf(pid: number): Set<number> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m !== null) inodes.add(m[1]!);
    } catch {
      // the fd closed while listing
    }
  }
  const ports = new Set<number>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const row of readFileSync(table, "utf8").split("\n").slice(1)) {
      const f = row.trim().split(/\s+/);
      if (f[3] === "0A" && f[9] !== undefined && inodes.has(f[9])) {
        ports.add(parseInt(f[1]!.split(":")[1]!, 16));
      }
    }
  }
  return ports;
}

/**
 * Connects to `port` until it accepts. The admin listener binds after the API listener, so an
 * accepting admin port means the gateway is serving. Each retry follows a refused connection.
 */
export async function waitUntilListening(
  port: number,
  exited: Promise<unknown>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let dead = false;
  void exited.then(() => (dead = true));
  while (!dead) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1");
      s.once("connect", () => (s.destroy(), resolve(true)));
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`gateway did not listen on ${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("gateway exited before listening");
}

/** Base config for a child gateway: {@link testConfig}'s shape with fixed ports and `info` logs. */
export function childConfig(
  upstreamUrl: string,
  ports: { apiPort: number; adminPort: number },
  overrides: Record<string, unknown> = {},
  listen: Record<string, unknown> = {},
): Record<string, unknown> {
  const tokensFile = fileURLToPath(new URL("../fixtures/gateway-tokens.yaml", import.meta.url));
  return {
    listen: { host: "127.0.0.1", port: ports.apiPort, grace_ms: 5000, ...listen },
    admin: { host: "127.0.0.1", port: ports.adminPort },
    upstreams: { docs: { url: upstreamUrl, timeout_ms: 30_000 } },
    routes: [{ prefix: "/v1", upstream: "docs" }],
    auth: { realm: "api", static: { tokens_file: tokensFile } },
    rate_limits: {
      classes: {
        read: { match: { methods: ["GET", "HEAD"] }, windows: [{ limit: 1000, window_s: 3600 }] },
        write: {
          match: { methods: ["POST", "PUT", "PATCH", "DELETE"] },
          windows: [{ limit: 1000, window_s: 3600 }],
        },
      },
      anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
    },
    log: { level: "info" },
    ...overrides,
  };
}
