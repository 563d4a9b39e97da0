/**
 * A real `redis-server` whose wall clock (Redis `TIME`, key expiry) a test sets, through Debian's
 * libfaketime (`faketime` package): the clock runs at real speed from the instant set, so a test
 * can put Redis a few seconds before a month, week or day boundary and watch it pass.
 *
 * - The offset lives in a file (`FAKETIME_TIMESTAMP_FILE`, read on every call with
 *   `FAKETIME_NO_CACHE=1`), so the clock is set once the gateway is up, however long starting took
 *   on a loaded machine, and the lead before the boundary stays a few seconds. libfaketime reads
 *   relative offsets in whole seconds: the clock lands within a second after the instant asked.
 * - Only the wall clock is faked (`FAKETIME_DONT_FAKE_MONOTONIC=1`): Redis's event loop and timers
 *   keep running on the real monotonic clock.
 * - Debian's redis-server uses jemalloc, which deadlocks under libfaketime at start
 *   (wolfcw/libfaketime#130): glibc's `libc_malloc_debug.so.0` is preloaded before libfaketime,
 *   whose allocations at load then go to glibc's malloc.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { cli, freePort, waitFor } from "./redis-server.js";

const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const p of live) p.kill("SIGKILL");
});

/** `<multiarch lib dir>/<rel>` of the first multiarch directory that has it (`dpkg -L libfaketime`). */
function findLib(rel: string): string {
  for (const dir of ["/usr/lib", "/lib"]) {
    if (!existsSync(dir)) continue;
    for (const arch of readdirSync(dir).filter((d) => d.endsWith("-linux-gnu"))) {
      const p = join(dir, arch, rel);
      if (existsSync(p)) return p;
    }
  }
  throw new Error(`${rel} not found: install Debian's faketime package (and glibc's libc6)`);
}

/** A redis-server on a settable wall clock. */
export class FakeClockRedis {
  readonly url: string;
  /** A client for reading the clock and keys. */
  readonly client: Redis;

  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly proc: ChildProcess,
  ) {
    this.url = `redis://127.0.0.1:${port}`;
    this.client = new Redis(port, "127.0.0.1");
  }

  /** Starts the server on the real time (offset 0). */
  static async start(): Promise<FakeClockRedis> {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), `faketime-redis-${port}-`));
    const offsetFile = join(dir, "faketime");
    writeFileSync(offsetFile, "+0\n");
    const env = {
      ...process.env,
      LD_PRELOAD: `${findLib("libc_malloc_debug.so.0")}:${findLib("faketime/libfaketime.so.1")}`,
      FAKETIME_TIMESTAMP_FILE: offsetFile,
      FAKETIME_NO_CACHE: "1",
      FAKETIME_DONT_FAKE_MONOTONIC: "1",
    };
    const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
    args.push("--dir", dir, "--logfile", join(dir, "redis.log"));
    const proc = spawn("redis-server", args, { stdio: "ignore", env });
    live.add(proc);
    proc.once("exit", () => live.delete(proc));
    await waitFor(`faketime redis-server on ${port}`, async () => (await cli(port, "PING")) === "PONG");
    return new FakeClockRedis(port, dir, proc);
  }

  /**
   * Sets Redis's wall clock to `epochMs` (within the next second: whole-second offsets) and
   * returns Redis's time once it reads the new clock.
   */
  async setClock(epochMs: number): Promise<number> {
    const offsetS = Math.ceil((epochMs - Date.now()) / 1000);
    writeFileSync(join(this.dir, "faketime"), `${offsetS >= 0 ? "+" : ""}${offsetS}\n`);
    const now = await this.timeMs();
    if (Math.abs(now - epochMs) > 2000) throw new Error(`faketime: Redis reads ${now}, not ${epochMs}`);
    return now;
  }

  /** Redis `TIME` (epoch ms). */
  async timeMs(): Promise<number> {
    const [s, us] = await this.client.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  }

  /** Resolves once Redis's clock has reached `epochMs` (polled every 50 ms, bounded). */
  async until(epochMs: number, timeoutMs = 10_000): Promise<void> {
    await waitFor(
      `Redis clock at ${new Date(epochMs).toISOString()}`,
      async () => (await this.timeMs()) >= epochMs,
      timeoutMs,
    );
  }

  async destroy(): Promise<void> {
    this.client.disconnect();
    if (this.proc.exitCode === null) {
      const exited = new Promise((r) => this.proc.once("exit", r));
      this.proc.kill("SIGKILL");
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
