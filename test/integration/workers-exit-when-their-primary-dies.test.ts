/**
 * `workers: 2` whose primary is killed outright (SIGKILL, the OOM killer): each worker notices its
 * IPC channel close, drains and exits, instead of waiting for ever to write its last lines to a
 * pipe nobody reads (`cluster/worker.ts`, `abandonOutput`). Real `gateway start`, real Redis.
 */
import { readFileSync } from "node:fs";
import http from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import { childConfig, spawnGateway, type ChildGateway } from "../helpers/child-gateway.js";
import { closeServer, listen } from "../helpers/http.js";
import { RedisServer, waitFor } from "../helpers/redis-server.js";

let redis: RedisServer;
let upstream: { server: http.Server; url: string };
let gw: ChildGateway;
/** Every worker PID a test saw, killed at the end if a failed test left one running. */
const seen: number[] = [];

/** A `workers: 2` group on the shared Redis and upstream, and its workers' PIDs. */
async function group(prefix: string): Promise<{ gw: ChildGateway; workers: number[] }> {
  const g = await spawnGateway(
    (ports) =>
      childConfig(upstream.url, ports, {
        workers: 2,
        rate_limits: {
          store: { redis: { url: redis.url, key_prefix: prefix } },
          classes: { read: { windows: [{ limit: 100, window_s: 60 }] } },
        },
      }),
    { readyTimeoutMs: 40_000 },
  );
  const listening = await g.waitForLine((l) => l.msg === "gateway listening" && Array.isArray(l.workerPids));
  const workers = listening.workerPids as number[];
  seen.push(...workers);
  return { gw: g, workers };
}

/**
 * Whether `pid` still runs. An exited orphan is re-parented to PID 1 and stays a zombie until that
 * reaps it (a container without an init may never): state Z counts as exited.
 */
function running(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0] !== "Z";
  } catch {
    return false;
  }
}

beforeAll(async () => {
  redis = await RedisServer.start();
  upstream = await listen((_req, res) => res.end('{"ok":true}'));
}, 60_000);

afterAll(async () => {
  for (const pid of seen.filter(running)) process.kill(pid, "SIGKILL");
  await gw?.dispose();
  await closeServer(upstream.server);
  await redis.destroy();
});

/** One GET on `agent` (keep-alive): resolves with the status once the body is read. */
function get(agent: http.Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(`${gw.url}/v1/items`, { agent, headers: { authorization: "Bearer valid-token" } }, (res) => {
        res.resume().on("end", () => resolve(res.statusCode ?? 0));
      })
      .on("error", reject);
  });
}

it("exits every worker once its primary is killed, even with its log pipe full", async () => {
  let workers: number[];
  ({ gw, workers } = await group("orphans"));
  expect(workers).toHaveLength(2);
  expect(workers.every(running)).toBe(true);
  // Eight kept-alive connections, handed to the workers by the primary while it still runs.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const warm = await Promise.all(Array.from({ length: 8 }, () => get(agent)));
  expect(warm).toEqual(Array.from({ length: 8 }, () => 200));
  // The primary stops reading its workers' output; their access lines (~300 bytes each) then
  // pile up in the pipes over the open connections (no new connection: the primary accepts those).
  gw.signal("SIGSTOP");
  const statuses = await Promise.all(Array.from({ length: 1200 }, () => get(agent)));
  expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
  agent.destroy();
  gw.signal("SIGKILL");
  await gw.exited;
  // Redis goes too (a host going down): the draining workers log its loss into the dead pipes.
  await redis.stop();
  try {
    // No event tells this process of a grandchild's exit: its /proc state is the signal.
    await waitFor("both workers to exit", async () => !workers.some(running), 20_000);
  } finally {
    await redis.start(); // the next test's group needs it, whatever this one found
  }
}, 60_000);

it("exits every worker when its primary is killed while the group stops", async () => {
  const g = await group("orphans-stop");
  gw = g.gw;
  // SIGTERM: the primary tells its workers to stop; then it is killed before they are done (an
  // orchestrator's stop timeout), so their last lines have no reader.
  gw.signal("SIGTERM");
  await gw.waitForLine((l) => l.msg === "shutting down");
  gw.signal("SIGKILL");
  await gw.exited;
  await waitFor("both workers to exit", async () => !g.workers.some(running), 20_000);
}, 60_000);
