/**
 * SPEC §16 per endpoint, end to end: each try's time to head lands in
 * `gateway_upstream_endpoint_duration_seconds{upstream,endpoint}` of the endpoint that answered and
 * each failed try in `gateway_upstream_endpoint_errors_total{upstream,endpoint,reason}` of the
 * endpoint that failed; and panic routing (no endpoint available) is logged once when it starts
 * and once when it ends, however many calls it routes.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../gateway/observability/logger.js";
import {
  HEALTH_PATH,
  poolConfig,
  startEndpoints,
  stopEndpoints,
  type TestEndpoint,
} from "../helpers/endpoints.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { agent, request } from "../helpers/http.js";
import { logLines } from "../helpers/log-lines.js";
import { scrape } from "../helpers/prom.js";
import { waitFor } from "../helpers/redis-server.js";

const AUTH = { authorization: "Bearer valid-token" };
const http = agent();
let endpoints: TestEndpoint[];
let gw: TestGateway | null = null;

beforeAll(async () => {
  endpoints = await startEndpoints(2);
});

afterEach(async () => {
  await gw?.close();
  gw = null;
  for (const e of endpoints) {
    Object.assign(e, { calls: 0, probes: 0, healthy: true, delayMs: 0, status: 200 });
    await e.stop();
    await e.start();
  }
});

afterAll(async () => {
  http.destroy();
  await stopEndpoints(endpoints);
});

const get = (g: TestGateway) => request(`${g.url}/v1/items`, { headers: AUTH, agent: http });

describe("per-endpoint metrics and panic routing's log", () => {
  it("times each answered try per endpoint and counts each failed try at the endpoint that failed", async () => {
    const [a, b] = endpoints as [TestEndpoint, TestEndpoint];
    a.delayMs = 30;
    await b.stop(); // b refuses connections
    gw = await startGateway(
      poolConfig(a, {
        endpoints: [{ url: a.url }, { url: b.url }],
        outlier_detection: { consecutive_failures: 0 },
      }),
    );
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await get(gw)).status);
    // Round robin: five calls each.
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 502)).toHaveLength(5);
    const m = await scrape(gw.adminUrl);
    const at = (e: TestEndpoint) => ({ upstream: "docs", endpoint: e.name });
    expect(m.value("gateway_upstream_endpoint_duration_seconds_count", at(a))).toBe(5);
    expect(m.value("gateway_upstream_endpoint_duration_seconds_sum", at(a))).toBeGreaterThanOrEqual(5 * 0.03);
    expect(m.value("gateway_upstream_endpoint_duration_seconds_bucket", { ...at(a), le: "0.025" })).toBe(0);
    expect(m.value("gateway_upstream_endpoint_duration_seconds_count", at(b))).toBe(0);
    expect(m.value("gateway_upstream_endpoint_errors_total", { ...at(b), reason: "connect" })).toBe(5);
    expect(m.sum("gateway_upstream_endpoint_errors_total", at(a))).toBe(0);
    expect(m.types.get("gateway_upstream_endpoint_duration_seconds")).toBe("histogram");
  });

  it("logs entering panic routing once and leaving it once, whatever the calls in between", async () => {
    const [a, b] = endpoints as [TestEndpoint, TestEndpoint];
    a.healthy = false;
    b.healthy = false;
    const log = logLines();
    gw = await startGateway(
      poolConfig(a, {
        endpoints: [{ url: a.url }, { url: b.url }],
        health_check: {
          path: HEALTH_PATH,
          interval_ms: 100,
          timeout_ms: 100,
          unhealthy_threshold: 1,
          healthy_threshold: 1,
        },
      }),
      { logger: createLogger("info", log.destination) },
    );
    const available = async () =>
      JSON.parse((await request(`${gw!.adminUrl}/upstreams`)).body).upstreams.docs.endpoints.map(
        (e: { healthy: boolean }) => e.healthy,
      ) as boolean[];
    await waitFor("both unhealthy", async () => (await available()).every((h) => !h));
    // Panic routing: calls still answered, spread over both.
    for (let i = 0; i < 6; i++) expect((await get(gw)).status).toBe(200);
    expect(a.calls).toBe(3);
    expect(b.calls).toBe(3);
    const entered = (l: Record<string, unknown>) =>
      l.level === "warn" && l.upstream === "docs" && String(l.msg).includes("in panic routing");
    const left = (l: Record<string, unknown>) =>
      l.level === "warn" && l.upstream === "docs" && String(l.msg).includes("left panic routing");
    await log.waitFor(entered);
    a.healthy = true;
    await log.waitFor(left);
    for (let i = 0; i < 4; i++) expect((await get(gw)).status).toBe(200);
    expect(log.lines.filter(entered)).toHaveLength(1);
    expect(log.lines.filter(left)).toHaveLength(1);
    expect((await scrape(gw.adminUrl)).value("gateway_upstream_panic_total", { upstream: "docs" })).toBe(6);
  });
});
