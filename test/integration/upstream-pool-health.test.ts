/**
 * SPEC §16 health end to end: active probes taking an endpoint out and back with their thresholds,
 * passive outlier detection ejecting an endpoint that refuses connections and taking it back after
 * its ejection time once it listens again on the same port, a 503 of the endpoint's own counting
 * as a failure, panic routing when nothing is available, and `GET /upstreams`.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  HEALTH_PATH,
  poolConfig,
  startEndpoints,
  stopEndpoints,
  type TestEndpoint,
} from "../helpers/endpoints.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { agent, request } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";
import { waitFor } from "../helpers/redis-server.js";

const AUTH = { authorization: "Bearer valid-token" };
const http = agent();
let endpoints: TestEndpoint[];
let gw: TestGateway | null = null;

async function gatewayWith(upstream: Record<string, unknown>): Promise<TestGateway> {
  const all = { endpoints: endpoints.map((e) => ({ url: e.url })), ...upstream };
  gw = await startGateway(poolConfig(endpoints[0]!, all));
  return gw;
}

const get = (g: TestGateway) => request(`${g.url}/v1/items`, { headers: AUTH, agent: http });

interface EndpointView {
  endpoint: string;
  url: string;
  weight: number;
  healthy: boolean;
  ejected: boolean;
  in_flight: number;
}
const upstreams = async (
  g: TestGateway,
): Promise<Record<string, { balancer: string; endpoints: EndpointView[] }>> =>
  JSON.parse((await request(`${g.adminUrl}/upstreams`)).body).upstreams;

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

describe("active health checks", () => {
  it("take an endpoint out after unhealthy_threshold failing probes and back after healthy_threshold", async () => {
    const g = await gatewayWith({
      // Probe timeouts generous enough that a loaded machine does not fail the healthy endpoint.
      health_check: {
        path: HEALTH_PATH,
        interval_ms: 200,
        timeout_ms: 200,
        unhealthy_threshold: 3,
        healthy_threshold: 3,
      },
    });
    const [a, b] = endpoints as [TestEndpoint, TestEndpoint];
    await waitFor("first probes", async () => a.probes > 0 && b.probes > 0);
    b.healthy = false;
    await waitFor("b unhealthy", async () => (await upstreams(g)).docs!.endpoints[1]!.healthy === false);
    const callsBefore = b.calls;
    for (let i = 0; i < 10; i++) expect((await get(g)).status).toBe(200);
    expect(b.calls).toBe(callsBefore);
    expect(a.calls).toBeGreaterThanOrEqual(10);
    let m = await scrape(g.adminUrl);
    expect(m.value("gateway_upstream_endpoint_available", { upstream: "docs", endpoint: b.name })).toBe(0);
    expect(
      m.value("gateway_upstream_health_checks_total", { upstream: "docs", endpoint: b.name, result: "fail" }),
    ).toBeGreaterThanOrEqual(2);

    const passesBefore = m.value("gateway_upstream_health_checks_total", {
      upstream: "docs",
      endpoint: b.name,
      result: "pass",
    });
    b.healthy = true;
    await waitFor("b healthy", async () => (await upstreams(g)).docs!.endpoints[1]!.healthy === true);
    // Three passing probes brought it back, not one.
    const passes = (await scrape(g.adminUrl)).value("gateway_upstream_health_checks_total", {
      upstream: "docs",
      endpoint: b.name,
      result: "pass",
    });
    expect(passes - passesBefore).toBeGreaterThanOrEqual(3);
    for (let i = 0; i < 10; i++) expect((await get(g)).status).toBe(200);
    expect(b.calls).toBe(callsBefore + 5);
    m = await scrape(g.adminUrl);
    expect(m.value("gateway_upstream_endpoint_available", { upstream: "docs", endpoint: b.name })).toBe(1);
    expect(
      m.value("gateway_upstream_health_checks_total", { upstream: "docs", endpoint: a.name, result: "pass" }),
    ).toBeGreaterThan(0);
  });

  it("route to every endpoint when none is available (panic), counting each such call", async () => {
    const g = await gatewayWith({
      health_check: {
        path: HEALTH_PATH,
        interval_ms: 50,
        timeout_ms: 50,
        unhealthy_threshold: 1,
        healthy_threshold: 1,
      },
    });
    for (const e of endpoints) e.healthy = false;
    await waitFor("all unhealthy", async () => (await upstreams(g)).docs!.endpoints.every((e) => !e.healthy));
    for (let i = 0; i < 6; i++) expect((await get(g)).status).toBe(200);
    expect(endpoints.map((e) => e.calls)).toEqual([3, 3]);
    const m = await scrape(g.adminUrl);
    expect(m.value("gateway_upstream_panic_total", { upstream: "docs" })).toBe(6);
  });
});

describe("outlier detection", () => {
  it("ejects an endpoint whose connections are refused and takes it back after its ejection time", async () => {
    const g = await gatewayWith({
      outlier_detection: { consecutive_failures: 2, base_ejection_ms: 3000, max_ejection_percent: 50 },
    });
    const [a, b] = endpoints as [TestEndpoint, TestEndpoint];
    await b.stop();
    // Round robin alternates: b's two refusals (502 each, no retries configured) eject it.
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await get(g)).status);
    expect(statuses.filter((s) => s === 502)).toHaveLength(2);
    const view = (await upstreams(g)).docs!.endpoints[1]!;
    expect(view).toMatchObject({ endpoint: b.name, ejected: true, healthy: true, in_flight: 0 });
    for (let i = 0; i < 6; i++) expect((await get(g)).status).toBe(200);
    expect(a.calls).toBe(8);
    let m = await scrape(g.adminUrl);
    expect(m.value("gateway_upstream_ejections_total", { upstream: "docs", endpoint: b.name })).toBe(1);
    expect(m.value("gateway_upstream_errors_total", { upstream: "docs", reason: "connect" })).toBe(2);
    expect(m.value("gateway_upstream_endpoint_available", { upstream: "docs", endpoint: b.name })).toBe(0);

    await b.start();
    // The gauge follows the ejection's end by itself, without a call to pick an endpoint.
    await waitFor(
      "b back from ejection",
      async () =>
        (await scrape(g.adminUrl)).value("gateway_upstream_endpoint_available", {
          upstream: "docs",
          endpoint: b.name,
        }) === 1,
    );
    expect((await upstreams(g)).docs!.endpoints[1]!.ejected).toBe(false);
    for (let i = 0; i < 4; i++) expect((await get(g)).status).toBe(200);
    expect(b.calls).toBe(2);
    m = await scrape(g.adminUrl);
    expect(m.value("gateway_upstream_endpoint_available", { upstream: "docs", endpoint: b.name })).toBe(1);
  });

  it("counts the endpoint's own 503s as failures, and a success resets the count", async () => {
    const g = await gatewayWith({
      outlier_detection: { consecutive_failures: 3, base_ejection_ms: 60000, max_ejection_percent: 50 },
    });
    const b = endpoints[1]!;
    b.status = 503;
    // b answers every other call: 503, 503 (two failures), then one 200 resets the count.
    for (let i = 0; i < 4; i++) await get(g);
    b.status = 200;
    await get(g);
    await get(g);
    expect((await upstreams(g)).docs!.endpoints[1]!.ejected).toBe(false);
    b.status = 503;
    for (let i = 0; i < 6; i++) await get(g);
    expect((await upstreams(g)).docs!.endpoints[1]!.ejected).toBe(true);
    const before = b.calls;
    for (let i = 0; i < 4; i++) expect((await get(g)).status).toBe(200);
    expect(b.calls).toBe(before);
  });

  it("never ejects the only endpoint of an upstream", async () => {
    const base = testConfig(endpoints[0]!.url);
    gw = await startGateway({
      ...base,
      upstreams: { docs: { url: endpoints[1]!.url, outlier_detection: { consecutive_failures: 1 } } },
    });
    await endpoints[1]!.stop();
    for (let i = 0; i < 3; i++) expect((await get(gw)).status).toBe(502);
    await endpoints[1]!.start();
    expect((await get(gw)).status).toBe(200);
    expect((await upstreams(gw)).docs!.endpoints).toEqual([
      {
        endpoint: endpoints[1]!.name,
        url: endpoints[1]!.url,
        weight: 1,
        healthy: true,
        ejected: false,
        in_flight: 0,
      },
    ]);
  });
});

describe("GET /upstreams", () => {
  it("shows each upstream's balancer and endpoints as SPEC §16 writes them (and §18's limit)", async () => {
    const g = await gatewayWith({ balancer: "least_request" });
    expect(await upstreams(g)).toEqual({
      docs: {
        balancer: "least_request",
        concurrency_limit: null,
        in_flight: 0,
        endpoints: endpoints.map((e) => ({
          endpoint: e.name,
          url: e.url,
          weight: 1,
          healthy: true,
          ejected: false,
          in_flight: 0,
        })),
      },
    });
  });
});
