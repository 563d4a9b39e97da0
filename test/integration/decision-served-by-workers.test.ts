/**
 * SPEC §23 with `workers: 2` (SPEC §15): every worker serves the decision listener on the one shared
 * port (node:cluster shares each port a worker binds), the API listener turned off
 * (`listen.enabled: false`); decisions from both workers count in the one Redis budget, and the
 * primary's "gateway listening" line names the decision port. The real `gateway start` command.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childConfig, freePorts, spawnGateway, type ChildGateway } from "../helpers/child-gateway.js";
import { request } from "../helpers/http.js";
import { RedisServer } from "../helpers/redis-server.js";

let redis: RedisServer;
let gw: ChildGateway;
let decisionPort: number;

beforeAll(async () => {
  redis = await RedisServer.start();
  [decisionPort] = (await freePorts(1)) as [number];
  gw = await spawnGateway(
    (ports) =>
      childConfig(
        "http://127.0.0.1:1",
        ports,
        {
          workers: 2,
          decision: { listen: { host: "127.0.0.1", port: decisionPort } },
          rate_limits: {
            store: { redis: { url: redis.url, key_prefix: "decision-workers", command_timeout_ms: 2000 } },
            classes: { read: { match: { methods: ["GET"] }, windows: [{ limit: 30, window_s: 3600 }] } },
            anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
          },
        },
        { enabled: false },
      ),
    { readyTimeoutMs: 40_000 },
  );
}, 60_000);

afterAll(async () => {
  await gw?.dispose();
  await redis.destroy();
});

describe("workers: 2, decision listener only", () => {
  it("the primary's line names the decision port and no API port", async () => {
    const line = await gw.waitForLine(
      (l) => l.msg === "gateway listening" && Array.isArray(l.workerPids),
      30_000,
    );
    expect(line.decisionPort).toBe(decisionPort);
    expect(line.apiPort).toBe(0);
    expect(gw.listeningPorts().has(gw.apiPort)).toBe(false);
  });

  it("both workers decide, counting in one budget", async () => {
    const remaining: number[] = [];
    // A connection each: node:cluster hands new connections to the workers in turn.
    for (let i = 0; i < 10; i++) {
      const res = await request(`http://127.0.0.1:${decisionPort}/decide/v1/user`, {
        headers: { authorization: "Bearer valid-token", "x-request-id": `workers-decision-${i}` },
      });
      expect(res.status).toBe(200);
      remaining.push(Number(res.headers["x-ratelimit-remaining"]));
    }
    expect(remaining).toEqual([29, 28, 27, 26, 25, 24, 23, 22, 21, 20]);
    const lines = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        gw.waitForLine((l) => l.msg === "request" && l.reqId === `workers-decision-${i}`, 10_000),
      ),
    );
    expect(lines.every((l) => l.mode === "decision")).toBe(true);
    expect(new Set(lines.map((l) => l.pid)).size).toBe(2);
  });
});
