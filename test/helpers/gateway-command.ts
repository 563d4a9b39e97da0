/**
 * Runs the real `gateway` command (through tsx, no build needed) to its end: for the commands that
 * exit (`check`, `version`, `help`) and for a `start` that must fail. Asynchronous, so the test
 * process keeps serving what the child talks to (a port holder, an authorization server).
 */
import { spawn } from "node:child_process";
import { REPO_ROOT } from "./child-gateway.js";

/** What a finished command wrote and how it ended. */
export interface CommandResult {
  /** Exit status; null when the deadline killed it. */
  status: number | null;
  stdout: string;
  stderr: string;
  /** Every non-empty line of stdout and stderr, in that order. */
  lines: string[];
}

/**
 * @param args - arguments after `gateway/main.ts`
 * @param options.env - added to the test process's environment (`undefined` values remove a name)
 * @param options.timeoutMs - SIGKILL after this (ms) @default 20000
 */
export function runGateway(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<CommandResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, ...options.env };
  for (const [k, v] of Object.entries(options.env ?? {})) if (v === undefined) delete env[k];
  const child = spawn(process.execPath, ["--import", "tsx", "gateway/main.ts", ...args], {
    cwd: REPO_ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 20_000);
  return new Promise((resolve) =>
    child.once("close", (code) => {
      clearTimeout(timer);
      const lines = [...stdout.split("\n"), ...stderr.split("\n")].filter((l) => l !== "");
      resolve({ status: code, stdout, stderr, lines });
    }),
  );
}

/** Parses every line as JSON; fails naming the first line that is not. */
export function jsonLines(lines: readonly string[]): Record<string, unknown>[] {
  return lines.map((l) => {
    try {
      return JSON.parse(l) as Record<string, unknown>;
    } catch {
      throw new Error(`not a JSON line: ${l}`);
    }
  });
}
