/**
 * Real `redis-server` processes for tests, on free ports in temporary directories, never the
 * machine's default instance on 6379: a standalone server (stop/start/pause for outage tests), a
 * three-master Cluster and a Sentinel group. Readiness is polled with `redis-cli` under a deadline.
 */
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const p of live) p.kill("SIGKILL");
});

/** First port of the test ranges: below Linux's ephemeral range (32768-60999 by default). */
const RANGE_START = 10_000;
/** Ports per test process; eight processes' ranges, and their +10000 bus ports, stay below 32768. */
const RANGE_SIZE = 1_200;
const SLOTS = 8;

/**
 * This process's slot: vitest's pool id (1..maxWorkers) keeps parallel test files apart; a
 * process outside vitest (a bench or soak script) takes one of the slots vitest's two workers
 * (vitest.config.ts) leave free.
 * @throws Error for a pool id beyond the slots, or an ephemeral range that starts below them
 */
function rangeSlot(): number {
  const pool = process.env.VITEST_POOL_ID;
  const slot = pool === undefined ? 2 + (process.pid % (SLOTS - 2)) : Number(pool) - 1;
  if (!(slot >= 0 && slot < SLOTS))
    throw new Error(`test ports: VITEST_POOL_ID ${pool} beyond ${SLOTS} slots`);
  let ephemeralLow = 32768;
  try {
    ephemeralLow = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").split(/\s+/)[0]);
  } catch {
    // Not Linux: assume the default.
  }
  if (RANGE_START + SLOTS * RANGE_SIZE + 10_000 > ephemeralLow) {
    throw new Error(`test ports: the ephemeral range starts at ${ephemeralLow}, inside the test ranges`);
  }
  return slot;
}

const rangeBase = RANGE_START + rangeSlot() * RANGE_SIZE;
let nextOffset = Math.floor(Math.random() * RANGE_SIZE);

/**
 * The unprivileged ports the Fetch standard's "bad port" list blocks (fetch.spec.whatwg.org, port
 * blocking; undici's `badPorts`): a test server on one is unreachable with `fetch` ("bad port").
 */
const FETCH_BAD_PORTS: ReadonlySet<number> = new Set([
  1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697,
  10080,
]);

/**
 * Resolves with a port nothing listens on (and, with `busOffset` ≤ 10000, port + offset free too).
 * Ports come from a range below the kernel's ephemeral ports, one range per vitest worker, handed
 * out in turn: a port listen(0) picked and released could be taken by a parallel test's server or
 * an outgoing connection's source port before it is used, and a stopped redis-server's port could
 * be taken before it starts again on it.
 */
export async function freePort(busOffset = 0): Promise<number> {
  for (let tries = 0; tries < RANGE_SIZE; tries++) {
    const port = rangeBase + (nextOffset++ % RANGE_SIZE);
    if (FETCH_BAD_PORTS.has(port)) continue;
    if ((await isFree(port)) && (busOffset === 0 || (await isFree(port + busOffset)))) return port;
  }
  throw new Error(`no free port in ${rangeBase}-${rangeBase + RANGE_SIZE - 1}`);
}

/** True when `port` can be bound on 127.0.0.1 now (bound, then released). */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/** Runs `redis-cli -p <port> <args...>` and returns its stdout (trimmed). */
export async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run("redis-cli", ["-p", String(port), ...args], { timeout: 5000 });
  return stdout.trim();
}

/** Polls `check` every 50 ms until it returns true; throws after `timeoutMs`. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One redis-server process that can be stopped and started again on the same port. */
export class RedisServer {
  readonly dir: string;
  private proc: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly args: string[],
  ) {
    this.dir = mkdtempSync(join(tmpdir(), `redis-${port}-`));
  }

  /** Starts a server on a free port with persistence off. `extraArgs` are redis-server options. */
  static async start(extraArgs: string[] = [], busOffset = 0): Promise<RedisServer> {
    const s = new RedisServer(await freePort(busOffset), extraArgs);
    await s.start();
    return s;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** (Re)starts the process and waits until it answers PING (with `--requirepass`, authenticated). */
  async start(): Promise<void> {
    const args = ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
    args.push("--dir", this.dir, "--logfile", join(this.dir, "redis.log"), ...this.args);
    const proc = spawn("redis-server", args, { stdio: "ignore" });
    this.proc = proc;
    live.add(proc);
    proc.once("exit", () => live.delete(proc));
    const pw = this.args.indexOf("--requirepass");
    const auth = pw < 0 ? [] : ["-a", this.args[pw + 1]!, "--no-auth-warning"];
    await waitFor(
      `redis-server on ${this.port}`,
      async () => (await cli(this.port, ...auth, "PING")) === "PONG",
    );
  }

  /** Kills the process (SIGKILL: an abrupt outage) and waits for it to exit. */
  async stop(): Promise<void> {
    const proc = this.proc;
    this.proc = undefined;
    if (proc === undefined || proc.exitCode !== null) return;
    const exited = new Promise((r) => proc.once("exit", r));
    proc.kill("SIGKILL");
    await exited;
  }

  /** SIGSTOP: the server keeps its connections but stops answering (a hung Redis). */
  pause(): void {
    this.proc?.kill("SIGSTOP");
  }

  /** SIGCONT after {@link pause}. */
  resume(): void {
    this.proc?.kill("SIGCONT");
  }

  /** Stops the process and removes its directory. */
  async destroy(): Promise<void> {
    this.resume();
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Three masters, no replicas, created with `redis-cli --cluster create`. */
export async function startCluster(): Promise<{ nodes: RedisServer[]; destroy(): Promise<void> }> {
  const nodes = await Promise.all(
    [0, 1, 2].map(() =>
      RedisServer.start(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"], 10_000),
    ),
  );
  const addrs = nodes.map((n) => `127.0.0.1:${n.port}`);
  await run("redis-cli", ["--cluster", "create", ...addrs, "--cluster-replicas", "0", "--cluster-yes"], {
    timeout: 20_000,
  });
  for (const n of nodes) {
    await waitFor(`cluster state ok on ${n.port}`, async () =>
      (await cli(n.port, "CLUSTER", "INFO")).includes("cluster_state:ok"),
    );
  }
  return { nodes, destroy: async () => void (await Promise.all(nodes.map((n) => n.destroy()))) };
}

/** A primary, one replica and one Sentinel monitoring them as `name` (quorum 1, fast timeouts). */
export async function startSentinel(name = "mymaster"): Promise<{
  primary: RedisServer;
  replica: RedisServer;
  sentinel: { port: number; url: string };
  destroy(): Promise<void>;
}> {
  const primary = await RedisServer.start();
  const replica = await RedisServer.start(["--replicaof", "127.0.0.1", String(primary.port)]);
  await waitFor("replica in sync", async () =>
    (await cli(replica.port, "INFO", "replication")).includes("master_link_status:up"),
  );
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), `sentinel-${port}-`));
  const conf = join(dir, "sentinel.conf");
  writeFileSync(
    conf,
    [
      `port ${port}`,
      "bind 127.0.0.1",
      `dir ${dir}`,
      `sentinel monitor ${name} 127.0.0.1 ${primary.port} 1`,
      `sentinel down-after-milliseconds ${name} 1000`,
      `sentinel failover-timeout ${name} 3000`,
      "",
    ].join("\n"),
  );
  const proc = spawn("redis-server", [conf, "--sentinel"], { stdio: "ignore" });
  live.add(proc);
  proc.once("exit", () => live.delete(proc));
  await waitFor("sentinel sees the replica", async () =>
    (await cli(port, "SENTINEL", "REPLICAS", name)).includes(String(replica.port)),
  );
  const sentinel = { port, url: `redis://127.0.0.1:${port}` };
  return {
    primary,
    replica,
    sentinel,
    destroy: async () => {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once("exit", r));
        proc.kill("SIGKILL");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
      await Promise.all([primary.destroy(), replica.destroy()]);
    },
  };
}
