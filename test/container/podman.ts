/**
 * The podman commands of the container test, each bounded in time and echoed as it runs, so the log
 * shows the exact commands (README "Deploying" lists the same ones). Settings come from
 * CONTAINERS_CONF (test/container/containers.conf), set by run.sh.
 */
import { spawn } from "node:child_process";

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `podman ...args`; resolves with its exit code and output, killing it after `timeoutMs`. */
export function podman(args: string[], timeoutMs = 60_000, echo = true): Promise<Result> {
  if (echo) console.log(`  $ podman ${args.map(quote).join(" ")}`);
  return new Promise((resolve) => {
    const child = spawn("podman", args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal === null ? 1 : 128), stdout: stdout.trim(), stderr: stderr.trim() });
    });
  });
}

/** Like {@link podman}, but throws with podman's own message when it exits non-zero. */
export async function podmanOk(args: string[], timeoutMs = 60_000, echo = true): Promise<string> {
  const r = await podman(args, timeoutMs, echo);
  if (r.code !== 0) throw new Error(`podman ${args[0] ?? ""} exited ${r.code}: ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** `podman container|image inspect --format` of one container or image. */
export function inspect(kind: "container" | "image", name: string, format: string): Promise<string> {
  return podmanOk([kind, "inspect", "--format", format, name], 30_000, false);
}

function quote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}
