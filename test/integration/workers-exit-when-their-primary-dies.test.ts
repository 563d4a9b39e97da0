/**
 * `workers: 2` whose primary is killed outright (SIGKILL, the OOM killer): each worker notices its
 * IPC channel close, drains and exits, instead of waiting for ever to write its last lines to a
 * pipe nobody reads (`cluster/worker.ts`, `abandonOutput`). Real `gateway start`, real Redis.
 */
import { existsSync } from "node:fs";
import http from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import { childConfig, spawnGateway, type ChildGateway } from "../helpers/child-gateway.js";
import { closeServer, listen } from "../helpers/http.js";
import { RedisServer, waitFor } from "../helpers/redis-server.js";

let redis: RedisServer;
let upstream: { server: http.Server; url: string };
let gw: ChildGateway;

beforeAll(async () => {
  redis = await RedisServer.start();
  upstream = await listen((_req, res) => res.end('{"ok":true}'));
  gw = await spawnGateway(
    (ports) =>
      childConfig(upstream.url, ports, {
        workers: 2,
        rate_limits: {
          store: { redis: { url: redis.url, key_prefix: "orphans" } },
          classes: { read: { windows: [{ limit: 100, window_s: 60 }] } },
        },
      }),
    { readyTimeoutMs: 40_000 },
  );
}, 60_000);

afterAll(async () => {
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
  const listening = await gw.waitForLine((l) => l.msg === "gateway listening" && Array.isArray(l.workerPids));
  const workers = listening.workerPids as number[];
  expect(workers).toHaveLength(2);
  for (const pid of workers) expect(existsSync(`/proc/${pid}`)).toBe(true);
  // Eight kept-alive connections, handed to the workers by the primary while it still runs.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const warm = await Promise.all(Array.from({ length: 8 }, () => get(agent)));
  expect(warm).toEqual(Array.from({ length: 8 }, () => 200));
  // The primary stops reading its workers' output; their access lines (~300 bytes each) then
  // fill the pipes (64 KiB each) over the open connections: the state in which an orphaned
  // worker used to wait for ever.
  gw.signal("SIGSTOP");
  const statuses = await Promise.all(Array.from({ length: 1200 }, () => get(agent)));
  expect(statuses.filter((s) => s === 200)).toHaveLength(92); // the limit (100) holds meanwhile
  agent.destroy();
  gw.signal("SIGKILL");
  await gw.exited;
  // Redis goes too (a host going down): the draining workers log its loss into the dead pipes.
  await redis.stop();
  // No event tells this process of a grandchild's exit: its /proc entry going is the signal.
  await waitFor(
    "both workers to exit",
    async () => workers.every((pid) => !existsSync(`/proc/${pid}`)),
    20_000,
  );
}, 60_000);
