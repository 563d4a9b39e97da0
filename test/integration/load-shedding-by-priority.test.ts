/**
 * SPEC §18 end to end, against a real upstream that holds its answers until the test lets them go:
 * critical callers admitted while sheddable ones are shed (503 upstream_overloaded, Retry-After 1,
 * before the limiter), the adaptive limit bounding the calls in flight, shadow mode counting and
 * logging `"shed":"shadow"` while proxying, the gauges and `GET /upstreams`.
 */
import type { ServerResponse } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../gateway/observability/logger.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { agent, closeServer, listen, request, type TestResponse } from "../helpers/http.js";
import { logLines, type LogLines } from "../helpers/log-lines.js";
import { scrape } from "../helpers/prom.js";
import { waitFor } from "../helpers/redis-server.js";

/** Static tokens (test/fixtures/gateway-tokens.yaml): alice's plan is critical, svc's sheddable. */
const CRITICAL = "valid-token";
const SHEDDABLE = "client-token";
const DEFAULT = "reader-token";
const keepAlive = agent();
/** Answers the upstream holds until {@link releaseAll}. */
const held: ServerResponse[] = [];
let upstream: Awaited<ReturnType<typeof listen>>;
let gw: TestGateway | null = null;
let log: LogLines;

beforeAll(async () => {
  upstream = await listen((_req, res) => {
    held.push(res);
  });
});

afterEach(async () => {
  releaseAll();
  await gw?.close();
  gw = null;
});

afterAll(async () => {
  keepAlive.destroy();
  await closeServer(upstream.server);
});

function releaseAll(): void {
  for (const res of held.splice(0)) if (!res.destroyed) res.end("ok");
}

async function gatewayWith(docs: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const base = testConfig(upstream.url);
  const rl = base.rate_limits as Record<string, unknown>;
  rl.plans = { gold: {}, free: {} };
  rl.consumers = [
    { sub: "alice", plan: "gold" },
    { client_id: "svc", plan: "free" },
  ];
  log = logLines();
  gw = await startGateway(
    { ...base, upstreams: { docs: { url: upstream.url, timeout_ms: 10_000, ...docs } }, ...extra },
    { logger: createLogger("info", log.destination) },
  );
  return gw;
}

const call = (g: TestGateway, token: string, id: string): Promise<TestResponse> =>
  request(`${g.url}/v1/items`, {
    headers: { authorization: `Bearer ${token}`, "x-request-id": id },
    agent: keepAlive,
  });

/** Sends `n` calls that the upstream holds, and waits until they are all there. */
async function hold(g: TestGateway, token: string, n: number): Promise<Promise<TestResponse>[]> {
  const want = held.length + n;
  const calls = Array.from({ length: n }, (_, i) => call(g, token, `${token}-held-${want}-${i}`));
  await waitFor(`${want} calls held upstream`, async () => held.length === want, 5000);
  return calls;
}

const upstreamsView = async (g: TestGateway) =>
  JSON.parse((await request(`${g.adminUrl}/upstreams`)).body).upstreams.docs as Record<string, unknown>;

const SHEDDING = { load_shedding: { priorities: { gold: "critical", free: "sheddable" } } };

describe("load shedding by priority", () => {
  it("sheds sheddable callers at half the limit while critical ones fill it", async () => {
    const g = await gatewayWith({ max_in_flight: 4 }, SHEDDING);
    const sheddable = await hold(g, SHEDDABLE, 2); // 2 < 0.5 × 4: the last admitted
    const shed = await call(g, SHEDDABLE, "shed");
    expect(shed.status).toBe(503);
    expect(shed.headers["retry-after"]).toBe("1");
    expect(JSON.parse(shed.body).error.message).toBe("Service overloaded, please retry");
    // Before the limiter: the caller's window read, not counted (100 per hour for reads).
    expect(shed.headers["x-ratelimit-remaining"]).toBe("98");
    const critical = await hold(g, CRITICAL, 2); // up to the whole limit
    expect((await call(g, DEFAULT, "default-shed")).status).toBe(503); // 4 >= 0.9 × 4
    expect((await call(g, CRITICAL, "critical-shed")).status).toBe(503); // 4 >= 1 × 4
    const m = await scrape(g.adminUrl);
    for (const priority of ["sheddable", "default", "critical"]) {
      expect(m.value("gateway_upstream_overloaded_total", { upstream: "docs", priority })).toBe(1);
    }
    expect(m.value("gateway_upstream_concurrency_limit", { upstream: "docs" })).toBe(4);
    expect(m.value("gateway_upstream_in_flight", { upstream: "docs" })).toBe(4);
    expect(await upstreamsView(g)).toMatchObject({ concurrency_limit: 4, in_flight: 4 });
    releaseAll();
    for (const r of await Promise.all([...sheddable, ...critical])) expect(r.status).toBe(200);
    const [after] = await hold(g, SHEDDABLE, 1);
    releaseAll();
    expect((await after!).status).toBe(200);
    await log.waitFor((l) => l.reqId === "shed" && l.error === "upstream_overloaded");
  });

  it("holds the calls in flight to the adaptive limit (which starts at max_limit)", async () => {
    const g = await gatewayWith({ adaptive_concurrency: { min_limit: 1, max_limit: 3 } });
    const calls = await hold(g, DEFAULT, 3);
    expect((await call(g, CRITICAL, "over")).status).toBe(503); // no load_shedding: all default
    const m = await scrape(g.adminUrl);
    expect(m.value("gateway_upstream_overloaded_total", { upstream: "docs", priority: "default" })).toBe(1);
    expect(m.value("gateway_upstream_concurrency_limit", { upstream: "docs" })).toBe(3);
    expect(await upstreamsView(g)).toMatchObject({ concurrency_limit: 3, in_flight: 3 });
    releaseAll();
    for (const r of await Promise.all(calls)) expect(r.status).toBe(200);
  });

  it("uses the smaller of max_in_flight and the adaptive limit", async () => {
    const g = await gatewayWith({ max_in_flight: 2, adaptive_concurrency: { max_limit: 50 } });
    expect(await upstreamsView(g)).toMatchObject({ concurrency_limit: 2, in_flight: 0 });
  });

  it("in shadow mode proxies what it would shed, counting it and logging shed: shadow", async () => {
    const g = await gatewayWith(
      { adaptive_concurrency: { min_limit: 1, max_limit: 2, mode: "shadow" } },
      SHEDDING,
    );
    const first = await hold(g, SHEDDABLE, 1); // 0 < 0.5 × 2
    const second = await hold(g, SHEDDABLE, 1); // 1 >= 0.5 × 2: would be shed
    const third = await hold(g, CRITICAL, 1); // 2 >= 1 × 2: would be shed too
    const m = await scrape(g.adminUrl);
    expect(m.value("gateway_upstream_overloaded_total", { upstream: "docs", priority: "sheddable" })).toBe(1);
    expect(m.value("gateway_upstream_overloaded_total", { upstream: "docs", priority: "critical" })).toBe(1);
    expect(await upstreamsView(g)).toMatchObject({ concurrency_limit: 2, in_flight: 3 });
    releaseAll();
    for (const r of await Promise.all([...first, ...second, ...third])) expect(r.status).toBe(200);
    const shadowed = await log.waitFor((l) => String(l.reqId).startsWith(`${CRITICAL}-held`));
    expect(shadowed).toMatchObject({ status: 200, shed: "shadow" });
    const admitted = await log.waitFor((l) => l.reqId === `${SHEDDABLE}-held-1-0`);
    expect(admitted.shed).toBeUndefined();
    const shadowedToo = await log.waitFor((l) => l.reqId === `${SHEDDABLE}-held-2-0`);
    expect(shadowedToo.shed).toBe("shadow");
  });

  it("without either block has no limit: nothing is shed, no limit series", async () => {
    const g = await gatewayWith({}, SHEDDING);
    const calls = await hold(g, SHEDDABLE, 5);
    expect(await upstreamsView(g)).toMatchObject({ concurrency_limit: null, in_flight: 5 });
    const m = await scrape(g.adminUrl);
    expect(m.select("gateway_upstream_concurrency_limit")).toEqual([]);
    expect(m.value("gateway_upstream_in_flight", { upstream: "docs" })).toBe(5);
    releaseAll();
    for (const r of await Promise.all(calls)) expect(r.status).toBe(200);
  });
});
