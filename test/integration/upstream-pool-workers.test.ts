/**
 * SPEC §16 with `workers: 2` (SPEC §15), against the real `gateway start` command: the primary
 * alone probes the endpoints (once per interval, not once per worker), every worker follows its
 * result, a worker started later (a replacement) gets the current state, and `GET /upstreams`
 * combines the workers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childConfig, spawnGateway, type ChildGateway } from "../helpers/child-gateway.js";
import { HEALTH_PATH, startEndpoints, stopEndpoints, type TestEndpoint } from "../helpers/endpoints.js";
import { request } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";
import { RedisServer, waitFor } from "../helpers/redis-server.js";

const AUTH = { authorization: "Bearer valid-token" };
const INTERVAL_MS = 200;
let redis: RedisServer;
let endpoints: TestEndpoint[];
let gw: ChildGateway;
let ports: { apiPort: number; adminPort: number };

/** The group's configuration; a different `timeoutMs` replaces the upstream on reload. */
function config(timeoutMs: number): Record<string, unknown> {
  return childConfig(endpoints[0]!.url, ports, {
    workers: 2,
    upstreams: {
      docs: {
        timeout_ms: timeoutMs,
        endpoints: endpoints.map((e) => ({ url: e.url })),
        health_check: {
          path: HEALTH_PATH,
          interval_ms: INTERVAL_MS,
          timeout_ms: INTERVAL_MS,
          unhealthy_threshold: 2,
          healthy_threshold: 1,
        },
      },
    },
    rate_limits: {
      store: { redis: { url: redis.url, key_prefix: "pool-workers", command_timeout_ms: 2000 } },
      classes: { read: { match: { methods: ["GET"] }, windows: [{ limit: 100_000, window_s: 3600 }] } },
      anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
    },
  });
}

beforeAll(async () => {
  redis = await RedisServer.start();
  endpoints = await startEndpoints(2);
  gw = await spawnGateway((p) => ((ports = p), config(30_000)), { readyTimeoutMs: 40_000 });
  await gw.waitForLine((l) => l.msg === "gateway listening" && Array.isArray(l.workerPids));
}, 60_000);

afterAll(async () => {
  await gw?.dispose();
  await stopEndpoints(endpoints);
  await redis.destroy();
});

/** `n` GETs, each on a connection of its own (node:cluster hands connections to workers in turn). */
async function calls(n: number): Promise<void> {
  for (let i = 0; i < n; i++)
    expect((await request(`${gw.url}/v1/items`, { headers: AUTH })).status).toBe(200);
}

const upstreams = async () => JSON.parse((await request(`${gw.adminUrl}/upstreams`)).body).upstreams;

describe("health checks with workers", () => {
  it("are sent once per interval by the primary, not once per worker", async () => {
    const before = endpoints.map((e) => e.probes);
    const started = performance.now();
    await waitFor("ten intervals", async () => performance.now() - started >= 10 * INTERVAL_MS);
    const elapsed = performance.now() - started;
    for (let i = 0; i < endpoints.length; i++) {
      const sent = endpoints[i]!.probes - before[i]!;
      // One prober: at most one probe per interval (and one the window cut in two); two would double it.
      expect(sent).toBeGreaterThan(0);
      expect(sent).toBeLessThanOrEqual(Math.ceil(elapsed / INTERVAL_MS) + 1);
    }
    const m = await scrape(gw.adminUrl);
    expect(m.sum("gateway_upstream_health_checks_total", { endpoint: endpoints[0]!.name })).toBeGreaterThan(
      0,
    );
  });

  it("take a failing endpoint out of every worker, and put it back", async () => {
    const b = endpoints[1]!;
    b.healthy = false;
    await waitFor("b unhealthy", async () => (await upstreams()).docs.endpoints[1].healthy === false);
    const before = b.calls;
    await calls(12);
    expect(b.calls).toBe(before);
    b.healthy = true;
    await waitFor("b healthy", async () => (await upstreams()).docs.endpoints[1].healthy === true);
    await calls(12);
    expect(b.calls).toBeGreaterThan(before);
  });

  it("hold across a reload that replaces the upstream in every worker", async () => {
    const b = endpoints[1]!;
    b.healthy = false;
    await waitFor("b unhealthy", async () => (await upstreams()).docs.endpoints[1].healthy === false);
    const reloads = gw.lines.filter((l) => l.msg === "configuration reloaded").length;
    gw.writeConfig(config(29_000));
    gw.signal("SIGHUP");
    await waitFor(
      "the reload",
      async () => gw.lines.filter((l) => l.msg === "configuration reloaded").length > reloads,
    );
    const before = b.calls;
    await calls(12);
    expect(b.calls).toBe(before);
    b.healthy = true;
    await waitFor("b healthy", async () => (await upstreams()).docs.endpoints[1].healthy === true);
  });

  it("reach a replacement worker, which starts on the current state", async () => {
    const b = endpoints[1]!;
    b.healthy = false;
    await waitFor("b unhealthy", async () => (await upstreams()).docs.endpoints[1].healthy === false);
    const started = gw.lines.find((l) => l.msg === "gateway listening" && Array.isArray(l.workerPids));
    const [victim, survivor] = started!.workerPids as number[];
    process.kill(victim!, "SIGKILL");
    await gw.waitForLine(
      (l) => l.msg === "worker listening" && l.workerPid !== victim && l.workerPid !== survivor,
      15_000,
    );
    const before = b.calls;
    await calls(12);
    expect(b.calls).toBe(before);
    const view = (await upstreams()).docs.endpoints;
    expect(view.map((e: { endpoint: string; in_flight: number }) => [e.endpoint, e.in_flight])).toEqual(
      endpoints.map((e) => [e.name, 0]),
    );
    b.healthy = true;
  });
});
