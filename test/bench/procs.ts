/**
 * Child processes of the benchmark: spawned pinned to the server core (`taskset -c 0`) where
 * taskset exists, polled until they accept TCP, and measured from /proc (CPU ticks, RSS).
 */
import { execFileSync, spawn, type ChildProcess, type StdioOptions } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import net from "node:net";

/** Core the servers run on; the load generator gets {@link LOAD_CORE}. */
export const SERVER_CORE = "0";
export const LOAD_CORE = "1";

/** True when `cmd` is on PATH. */
export function hasCommand(cmd: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

const TASKSET = hasCommand("taskset");
/** Linux clock ticks per second (/proc/<pid>/stat unit). */
const CLK_TCK = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** `[cmd, args]` prefixed with `taskset -c <core>` when taskset exists. */
export function pinned(core: string, cmd: string, args: string[]): [string, string[]] {
  return TASKSET ? ["taskset", ["-c", core, cmd, ...args]] : [cmd, args];
}

/** True when taskset is available (the report says whether processes were pinned). */
export const isPinned = TASKSET;

/** A spawned child with its stderr kept for error messages. */
export interface Child {
  readonly name: string;
  readonly proc: ChildProcess;
  /** pid of the measured process (taskset execs, so it is the child's pid). */
  readonly pid: number;
  stderr(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when exited. */
  stop(graceMs?: number): Promise<void>;
  readonly exited: Promise<number | null>;
}

const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const p of live) p.kill("SIGKILL");
});
// Ctrl-C or a kill of the harness: exit through "exit" so the children go too.
for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => process.exit(130));

/**
 * Spawns `cmd args` on the server core (or `opts.core`).
 * @param stdout - "ignore" (default: a server's logs cost it the write, nobody reads them) or "pipe"
 */
export function spawnServer(
  name: string,
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; stdout?: "ignore" | "pipe"; cwd?: string; core?: string } = {},
): Child {
  const [c, a] = pinned(opts.core ?? SERVER_CORE, cmd, args);
  const stdio: StdioOptions = ["ignore", opts.stdout ?? "ignore", "pipe"];
  const proc = spawn(c, a, { stdio, env: { ...process.env, ...opts.env }, cwd: opts.cwd });
  live.add(proc);
  let err = "";
  proc.stderr!.setEncoding("utf8").on("data", (s: string) => {
    if (err.length < 20_000) err += s;
  });
  const exited = new Promise<number | null>((resolve) =>
    proc.once("exit", (code) => {
      live.delete(proc);
      resolve(code);
    }),
  );
  return {
    name,
    proc,
    pid: proc.pid!,
    stderr: () => err,
    exited,
    async stop(graceMs = 5000) {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(t);
    },
  };
}

/** Connects to `port` until it accepts, the child exits, or `timeoutMs` passes. */
export async function waitForPort(child: Child, port: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let dead = false;
  void child.exited.then(() => (dead = true));
  while (!dead && Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1");
      s.once("connect", () => (s.destroy(), resolve(true)));
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    await sleep(25);
  }
  throw new Error(
    `${child.name} did not listen on ${port}${dead ? " (exited)" : ` within ${timeoutMs} ms`}: ${child.stderr()}`,
  );
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** User + system CPU time of `pid` so far (µs). */
export function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(rest[11]) + Number(rest[12]);
  return (ticks * 1e6) / CLK_TCK;
}

/** `pid` and every process below it (a `workers` gateway's primary and its workers), from /proc. */
export function processTree(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    try {
      for (const tid of readdirSync(`/proc/${out[i]!}/task`)) {
        const kids = readFileSync(`/proc/${out[i]!}/task/${tid}/children`, "utf8").trim();
        if (kids !== "") out.push(...kids.split(" ").map(Number));
      }
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** CPU time of `pid` and every process below it (µs); processes that exited meanwhile count 0. */
export function cpuMicrosTree(pid: number): number {
  let sum = 0;
  for (const p of processTree(pid)) {
    try {
      sum += cpuMicros(p);
    } catch {
      // exited meanwhile
    }
  }
  return sum;
}

/** Resident set size of `pid` (bytes), from VmRSS. */
export function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m === null ? 0 : Number(m[1]) * 1024;
}

/** Pins this (harness) process to the server core so it never takes the load generator's core. */
export function pinSelf(): void {
  if (!TASKSET) return;
  try {
    execFileSync("taskset", ["-pc", SERVER_CORE, String(process.pid)], { stdio: "ignore" });
  } catch {
    // Not fatal: only the load generator's core matters.
  }
}
