/**
 * `/metrics` passes `promtool check metrics`: Prometheus's own linter of the exposition
 * (names, `_total` only on counters, units, help text), on a gateway that has served 200s, 401s and
 * 429s, and on a cluster primary's combined view of its workers (SPEC §15). prom-client's three
 * default gauges named `*_total` are left out (gateway/observability/process-metrics.ts).
 * promtool comes from Debian's `prometheus` package; without it the test is skipped locally and
 * fails under CI (`CI` set), as test/repository/monitoring-rules.test.ts does.
 */
import { spawnSync } from "node:child_process";
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import { MISNAMED_DEFAULT_GAUGES } from "../../gateway/observability/process-metrics.js";
import { childConfig, spawnGateway, type ChildGateway } from "../helpers/child-gateway.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { RedisServer } from "../helpers/redis-server.js";

const hasPromtool = spawnSync("promtool", ["--version"]).status === 0;

function requirePromtool(ctx: TestContext): void {
  if (hasPromtool) return;
  if (process.env.CI) throw new Error("promtool is not on PATH; CI must install it (Debian `prometheus`)");
  ctx.skip("promtool not on PATH (Debian package `prometheus`); required when CI is set");
}

/** promtool's verdict on an exposition: its exit status and what it printed. */
function promtool(exposition: string): { status: number | null; out: string } {
  const r = spawnSync("promtool", ["check", "metrics"], { input: exposition, encoding: "utf8" });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

let upstream: { server: Server; url: string };
let gw: TestGateway;
let redis: RedisServer;
let group: ChildGateway;

beforeAll(async () => {
  upstream = await listen((_req, res) => res.writeHead(200).end("ok"));
  redis = await RedisServer.start();
  gw = await startGateway(testConfig(upstream.url));
  group = await spawnGateway(
    (ports) =>
      childConfig(upstream.url, ports, {
        workers: 2,
        rate_limits: {
          store: { redis: { url: redis.url, key_prefix: "promtool" } },
          classes: { read: { windows: [{ limit: 100, window_s: 60 }] } },
        },
      }),
    { readyTimeoutMs: 40_000 },
  );
}, 60_000);

afterAll(async () => {
  await Promise.all([gw?.close(), group?.dispose()]);
  await Promise.all([closeServer(upstream.server), redis?.stop()]);
});

async function traffic(url: string): Promise<void> {
  const auth = { authorization: "Bearer valid-token" };
  for (let i = 0; i < 5; i++) await request(`${url}/v1/search`, { headers: auth }); // 200s, then 429
  await request(`${url}/v1/items`); // 401
  await request(`${url}/v1/items`, { headers: { authorization: "Bearer nope" } }); // 401
}

describe("promtool check metrics", () => {
  it("accepts a gateway's /metrics after 200s, 401s and 429s", async (ctx) => {
    requirePromtool(ctx);
    await traffic(gw.url);
    const body = (await request(`${gw.adminUrl}/metrics`)).body;
    for (const name of MISNAMED_DEFAULT_GAUGES) expect(body).not.toContain(name);
    expect(body).toContain("nodejs_active_handles{");
    expect(promtool(body)).toEqual({ status: 0, out: "" });
  });

  it("accepts a cluster primary's combined /metrics", async (ctx) => {
    requirePromtool(ctx);
    await traffic(group.url);
    const body = (await request(`${group.adminUrl}/metrics`)).body;
    expect(body).toContain("gateway_requests_total{");
    expect(promtool(body)).toEqual({ status: 0, out: "" });
  });
});
