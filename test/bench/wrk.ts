/**
 * The load generator: `wrk` (Debian package `wrk`), one thread pinned to the load core, keep-alive
 * connections, a Lua script that sets `Authorization`, and a parser for its `--latency` report.
 */
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { LOAD_CORE, hasCommand, pinned } from "./procs.js";

/**
 * Makes sure `wrk` is on PATH: installs it with apt-get when running as root, else explains.
 * @returns an error message, or null when wrk is usable
 */
export function ensureWrk(): string | null {
  if (hasCommand("wrk")) return null;
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  if (root && hasCommand("apt-get")) {
    console.log("wrk not found; installing it: apt-get install -y wrk");
    try {
      execFileSync("apt-get", ["install", "-y", "wrk"], { stdio: "inherit", timeout: 180_000 });
    } catch {
      try {
        execFileSync("apt-get", ["update"], { stdio: "inherit", timeout: 180_000 });
        execFileSync("apt-get", ["install", "-y", "wrk"], { stdio: "inherit", timeout: 180_000 });
      } catch {
        // Fall through to the message below.
      }
    }
    if (hasCommand("wrk")) return null;
  }
  return (
    "wrk is required for the benchmark. Install it with `sudo apt-get install -y wrk` (Debian/Ubuntu), " +
    "`brew install wrk` (macOS), or build it from https://github.com/wg/wrk, then run `npm run bench` again."
  );
}

/**
 * Lua: one fixed bearer token on every request.
 * @param name - file name stem of the script
 */
export function staticTokenScript(dir: string, token: string, name = "static-token"): string {
  const file = path.join(dir, `${name}.lua`);
  writeFileSync(file, `wrk.method = "GET"\nwrk.headers["Authorization"] = "Bearer ${token}"\n`);
  return file;
}

/**
 * Lua: cycles through the tokens listed in `tokensFile` (one per line), one per request.
 * @param stopAfterOnePass - stop once every token was answered once (cold tokens: each token is
 *   new to the gateway exactly once; the few in-flight requests past the end reuse tokens); the
 *   script then creates `doneFile`, for {@link runWrk}'s `doneFile`
 * @param name - file name stem of the script and of its done file
 */
export function cyclingTokenScript(
  dir: string,
  tokensFile: string,
  stopAfterOnePass: boolean,
  name: string,
): { script: string; doneFile: string } {
  const file = path.join(dir, `${name}.lua`);
  const doneFile = path.join(dir, `${name}.done`);
  writeFileSync(
    file,
    `local tokens = {}
for line in io.lines(${JSON.stringify(tokensFile)}) do
  if line ~= "" then tokens[#tokens + 1] = "Bearer " .. line end
end
local n = #tokens
local i = 0
local answered = 0
request = function()
  i = i + 1
  local t = tokens[((i - 1) % n) + 1]
  return wrk.format("GET", nil, { ["Authorization"] = t })
end
${
  stopAfterOnePass
    ? `response = function(status, headers, body)
  answered = answered + 1
  if answered == n then
    local f = io.open(${JSON.stringify(doneFile)}, "w")
    if f then f:close() end
    wrk.thread:stop()
  end
end
`
    : ""
}`,
  );
  return { script: file, doneFile };
}

/** One wrk run, parsed. Latencies in ms. */
export interface WrkResult {
  requests: number;
  durationS: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses outside 2xx/3xx. */
  non2xx: number;
  /** connect + read + write + timeout socket errors. */
  socketErrors: number;
  raw: string;
}

/**
 * Runs wrk for `seconds` against `url` with `connections` keep-alive connections on one thread.
 * @param opts.doneFile - stop wrk (SIGINT: it then reports the time actually run) as soon as this
 *   file exists; the cold-token script creates it after one pass over its tokens
 * @throws Error when wrk fails or its output cannot be parsed
 */
export async function runWrk(
  url: string,
  opts: { seconds: number; connections: number; script: string; doneFile?: string },
): Promise<WrkResult> {
  const args = [
    "-t1",
    `-c${opts.connections}`,
    `-d${opts.seconds}s`,
    "--timeout",
    "5s",
    "--latency",
    "-s",
    opts.script,
    url,
  ];
  const [cmd, a] = pinned(LOAD_CORE, "wrk", args);
  const proc = spawn(cmd, a, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  proc.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
  proc.stderr.setEncoding("utf8").on("data", (c: string) => (err += c));
  const kill = setTimeout(() => proc.kill("SIGKILL"), (opts.seconds + 30) * 1000);
  const poll =
    opts.doneFile === undefined
      ? undefined
      : setInterval(() => {
          if (existsSync(opts.doneFile!)) proc.kill("SIGINT");
        }, 20);
  const [code] = (await once(proc, "exit")) as [number | null];
  clearTimeout(kill);
  clearInterval(poll);
  if (code !== 0) throw new Error(`wrk exited with ${code}: ${err}${out}`);
  return parseWrk(out);
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

function durationMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim());
  if (m === null) throw new Error(`cannot parse wrk duration "${text}"`);
  return Number(m[1]) * UNIT_MS[m[2]!]!;
}

/** Parses wrk 4's report (with `--latency`). */
export function parseWrk(out: string): WrkResult {
  const need = (re: RegExp, what: string): RegExpExecArray => {
    const m = re.exec(out);
    if (m === null) throw new Error(`wrk output has no ${what}:\n${out}`);
    return m;
  };
  const total = need(/(\d+) requests in ([\d.]+\w+),/, "request count");
  const rps = need(/Requests\/sec:\s+([\d.]+)/, "Requests/sec");
  const p50 = need(/^\s+50%\s+(\S+)\s*$/m, "50% latency");
  const p99 = need(/^\s+99%\s+(\S+)\s*$/m, "99% latency");
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    requests: Number(total[1]),
    durationS: durationMs(total[2]!) / 1000,
    rps: Number(rps[1]),
    p50Ms: durationMs(p50[1]!),
    p99Ms: durationMs(p99[1]!),
    non2xx: non2xx === null ? 0 : Number(non2xx[1]),
    socketErrors: sock === null ? 0 : sock.slice(1, 5).reduce((s, v) => s + Number(v), 0),
    raw: out,
  };
}
