/**
 * SPEC §16 balancers end to end, with real endpoints counting what they receive: smooth weighted
 * round robin's exact shares, least_request preferring the endpoint that answers fast, and
 * consistent_hash keeping each key on one endpoint while moving only the keys of an endpoint that
 * leaves (here, by failing its health checks).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  HEALTH_PATH,
  poolConfig,
  startEndpoints,
  stopEndpoints,
  type TestEndpoint,
} from "../helpers/endpoints.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { agent, request } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";
import { waitFor } from "../helpers/redis-server.js";

const AUTH = { authorization: "Bearer valid-token" };
const http = agent();
let endpoints: TestEndpoint[];
let gw: TestGateway | null = null;

/** A gateway over `endpoints` with the upstream settings given, and a read limit out of the way. */
async function gatewayWith(upstream: Record<string, unknown>): Promise<TestGateway> {
  gw = await startGateway(poolConfig(endpoints[0]!, upstream));
  return gw;
}

const get = (g: TestGateway, headers: Record<string, string> = {}) =>
  request(`${g.url}/v1/items`, { headers: { ...AUTH, ...headers }, agent: http });

beforeAll(async () => {
  endpoints = await startEndpoints(3);
});

afterEach(async () => {
  await gw?.close();
  gw = null;
  for (const e of endpoints)
    Object.assign(e, { calls: 0, probes: 0, healthy: true, delayMs: 0, status: 200 });
});

afterAll(async () => {
  http.destroy();
  await stopEndpoints(endpoints);
});

describe("round_robin (smooth weighted)", () => {
  it("gives each endpoint exactly its weight's share, interleaved, and names it in the access metrics", async () => {
    const g = await gatewayWith({
      endpoints: endpoints.map((e, i) => ({ url: e.url, weight: i + 1 })),
    });
    const order: string[] = [];
    for (let i = 0; i < 60; i++) {
      const r = await get(g);
      expect(r.status).toBe(200);
      order.push(r.headers["x-endpoint"] as string);
    }
    expect(endpoints.map((e) => e.calls)).toEqual([10, 20, 30]);
    // Every run of sum(weights) = 6 picks holds each endpoint its weight's number of times.
    for (let i = 0; i + 6 <= order.length; i += 6) {
      const run = order.slice(i, i + 6);
      expect(["0", "1", "2"].map((n) => run.filter((x) => x === n).length)).toEqual([1, 2, 3]);
    }
    // Interleaved: the weight-3 endpoint is never picked three times in a row.
    expect(order.join("")).not.toContain("222");
    const m = await scrape(g.adminUrl);
    for (const e of endpoints) {
      expect(
        m.value("gateway_upstream_endpoint_requests_total", { upstream: "docs", endpoint: e.name }),
      ).toBe(e.calls);
      expect(m.value("gateway_upstream_endpoint_available", { upstream: "docs", endpoint: e.name })).toBe(1);
    }
  });
});

describe("least_request (power of two choices)", () => {
  it("sends most calls to the endpoint that answers fast", async () => {
    const g = await gatewayWith({
      endpoints: endpoints.slice(0, 2).map((e) => ({ url: e.url })),
      balancer: "least_request",
    });
    endpoints[0]!.delayMs = 300;
    // Eight callers, 48 calls: the slow endpoint keeps its calls in flight, so it loses the choices.
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next++ < 48) expect((await get(g)).status).toBe(200);
      }),
    );
    const [slow, fast] = [endpoints[0]!.calls, endpoints[1]!.calls];
    expect(slow + fast).toBe(48);
    expect(fast).toBeGreaterThan(3 * slow);
  });
});

describe("consistent_hash", () => {
  it("keeps each key on one endpoint; when one leaves only its keys move, and they come back", async () => {
    const g = await gatewayWith({
      endpoints: endpoints.map((e) => ({ url: e.url })),
      balancer: "consistent_hash",
      hash_on: "header:x-tenant",
      health_check: {
        path: HEALTH_PATH,
        interval_ms: 200,
        timeout_ms: 200,
        unhealthy_threshold: 2,
        healthy_threshold: 1,
      },
    });
    const keys = Array.from({ length: 60 }, (_, i) => `tenant-${i}`);
    const where = async (): Promise<Map<string, string>> => {
      const out = new Map<string, string>();
      for (const k of keys) out.set(k, (await get(g, { "x-tenant": k })).headers["x-endpoint"] as string);
      return out;
    };
    const before = await where();
    expect(await where()).toEqual(before);
    // Every endpoint holds some keys.
    expect(new Set(before.values()).size).toBe(3);

    endpoints[2]!.healthy = false;
    await waitFor("endpoint 2 unhealthy", async () => {
      const u = JSON.parse((await request(`${g.adminUrl}/upstreams`)).body);
      return u.upstreams.docs.endpoints[2].healthy === false;
    });
    const during = await where();
    for (const k of keys) {
      if (before.get(k) === "2") expect(during.get(k)).not.toBe("2");
      else expect(during.get(k)).toBe(before.get(k));
    }

    endpoints[2]!.healthy = true;
    await waitFor("endpoint 2 healthy", async () => {
      const u = JSON.parse((await request(`${g.adminUrl}/upstreams`)).body);
      return u.upstreams.docs.endpoints[2].healthy === true;
    });
    expect(await where()).toEqual(before);
  });

  it("spreads calls without the header by round robin", async () => {
    const g = await gatewayWith({
      endpoints: endpoints.map((e) => ({ url: e.url })),
      balancer: "consistent_hash",
      hash_on: "header:x-tenant",
    });
    for (let i = 0; i < 9; i++) expect((await get(g)).status).toBe(200);
    expect(endpoints.map((e) => e.calls)).toEqual([3, 3, 3]);
  });

  it("hashes on the caller's identity by default: one caller, one endpoint", async () => {
    const g = await gatewayWith({
      endpoints: endpoints.map((e) => ({ url: e.url })),
      balancer: "consistent_hash",
    });
    const seen = new Set<string>();
    for (let i = 0; i < 12; i++) seen.add((await get(g)).headers["x-endpoint"] as string);
    expect(seen.size).toBe(1);
  });
});
