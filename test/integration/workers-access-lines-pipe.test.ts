/**
 * SPEC §15: access lines from different workers never interleave within a line, whatever stdout
 * is, also with a slow reader. The real `gateway start` with `workers: 2` writes to a named pipe
 * (a FIFO: 64 KiB of buffer, atomic writes only up to PIPE_BUF) that this test leaves unread while
 * thousands of requests go through both workers, then reads in small sips: every line must parse
 * as JSON, and there must be exactly one access line per request.
 */
import { execFileSync, spawn } from "node:child_process";
import { constants, closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import http, { type Server } from "node:http";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, expect, it } from "vitest";
import { childConfig, freePorts, REPO_ROOT, waitUntilListening } from "../helpers/child-gateway.js";
import { closeServer, listen } from "../helpers/http.js";
import { RedisServer } from "../helpers/redis-server.js";

const REQUESTS = 3000;
const CONNECTIONS = 32;
/** Bounds of the load and of the reading (ms). */
const LOAD_DEADLINE_MS = 40_000;
const READ_DEADLINE_MS = 20_000;

let redis: RedisServer;
let upstream: { server: Server; url: string };
let dir: string;

beforeAll(async () => {
  redis = await RedisServer.start();
  upstream = await listen((_req, res) => res.end('{"ok":true}'));
  dir = mkdtempSync(path.join(tmpdir(), "workers-pipe-"));
});

afterAll(async () => {
  await closeServer(upstream.server);
  await redis.destroy();
  rmSync(dir, { recursive: true, force: true });
});

it("keeps every line whole through a pipe whose reader lags, from both workers", async () => {
  const [apiPort, adminPort] = (await freePorts(2)) as [number, number];
  const file = path.join(dir, "gateway.yaml");
  writeFileSync(
    file,
    stringify(
      childConfig(
        upstream.url,
        { apiPort, adminPort },
        {
          workers: 2,
          rate_limits: {
            store: { redis: { url: redis.url, key_prefix: "pipe", command_timeout_ms: 2000 } },
            classes: { read: { windows: [{ limit: 1_000_000, window_s: 3600 }] } },
            anonymous: { windows: [{ limit: 1_000_000, window_s: 3600 }] },
          },
        },
      ),
    ),
  );
  const fifo = path.join(dir, "stdout.fifo");
  execFileSync("mkfifo", [fifo]);
  // The read end first (non-blocking), so that opening the write end does not wait.
  const readFd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const writeFd = openSync(fifo, constants.O_WRONLY);
  const child = spawn(process.execPath, ["--import", "tsx", "gateway/main.ts", "start", "--config", file], {
    cwd: REPO_ROOT,
    stdio: ["ignore", writeFd, "pipe"],
  });
  closeSync(writeFd);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (s: string) => (stderr += s));
  const reader = new net.Socket({ fd: readFd, readable: true, writable: false });
  reader.pause();
  const chunks: Buffer[] = [];
  reader.on("data", (c: Buffer) => chunks.push(c));
  const eof = new Promise<void>((resolve) => reader.once("end", resolve));
  /** A slow reader: one read of at most what the pipe holds, then nothing for a while. */
  const sip = () => {
    reader.resume();
    reader.once("data", () => reader.pause());
  };
  try {
    await waitUntilListening(adminPort, exited, 40_000).catch((e: Error) => {
      throw new Error(`${e.message}; stderr: ${stderr}`);
    });

    // The load, while the reader takes a sip only every 250 ms.
    const sipping = setInterval(sip, 250);
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
    const deadline = Date.now() + LOAD_DEADLINE_MS;
    let sent = 0;
    let ok = 0;
    const worker = async () => {
      while (sent < REQUESTS && Date.now() < deadline) {
        sent++;
        const status = await new Promise<number>((resolve, reject) => {
          const req = http.get(
            `http://127.0.0.1:${apiPort}/v1/items/${sent}`,
            { agent, headers: { authorization: "Bearer valid-token" } },
            (res) => {
              res.resume();
              res.on("end", () => resolve(res.statusCode ?? 0));
            },
          );
          req.on("error", reject);
        });
        if (status === 200) ok++;
      }
    };
    await Promise.all(Array.from({ length: CONNECTIONS }, worker));
    agent.destroy();
    clearInterval(sipping);
    expect(ok).toBe(REQUESTS);

    // Stop the group (it flushes every line), and read to the end of the pipe.
    child.kill("SIGTERM");
    reader.resume();
    await Promise.race([
      eof,
      new Promise((_, reject) => setTimeout(() => reject(new Error("no end of stdout")), READ_DEADLINE_MS)),
    ]);
    expect(await exited).toBe(0);
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
    reader.destroy();
  }
  const text = Buffer.concat(chunks).toString("utf8");
  expect(text.endsWith("\n")).toBe(true);
  const lines = text.slice(0, -1).split("\n");
  const broken = lines.filter((l) => {
    try {
      JSON.parse(l);
      return false;
    } catch {
      return true;
    }
  });
  expect(broken.slice(0, 3)).toEqual([]);
  const access = lines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === "request");
  expect(access).toHaveLength(REQUESTS);
  expect(new Set(access.map((l) => l.path)).size).toBe(REQUESTS);
  expect(new Set(access.map((l) => l.pid)).size).toBe(2);
  // The pipe really was full: far more was written than it holds.
  expect(text.length).toBeGreaterThan(16 * 65536);
}, 90_000);
