/**
 * SPEC §13 "never in the way": with the collector refusing connections, or accepting them and
 * never answering, 1000 requests are all answered, and every sampled span (a SERVER and a CLIENT
 * span per request here: memory store, static tokens) ends up counted, exported or dropped by
 * reason, once the gateway has closed (which flushes its span queue). The span queue is made small
 * (`OTEL_BSP_MAX_QUEUE_SIZE`) so a hung collector fills it; exports give up after
 * `OTEL_EXPORTER_OTLP_TIMEOUT`.
 */
import http, { type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig } from "../helpers/gateway.js";
import { REFUSED_PORT, agent, closeServer, listen, request } from "../helpers/http.js";
import { parsePrometheusText } from "../helpers/prom.js";

const REQUESTS = 1000;
const CONCURRENCY = 50;
const SPANS_PER_REQUEST = 2;
const ENV = {
  OTEL_BSP_MAX_QUEUE_SIZE: "100",
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "50",
  OTEL_BSP_SCHEDULE_DELAY: "20",
  OTEL_EXPORTER_OTLP_TIMEOUT: "300",
};

let upstream: Awaited<ReturnType<typeof listen>>;

beforeAll(async () => {
  Object.assign(process.env, ENV);
  upstream = await listen((_req, res) => res.end("ok"));
});

afterAll(async () => {
  for (const k of Object.keys(ENV)) delete process.env[k];
  await closeServer(upstream.server);
});

/** Runs the requests through a gateway exporting to `endpoint`; returns statuses and counters after close. */
/** The span counters after a run. */
interface Counts {
  exported: number;
  queueFull: number;
  exportFailed: number;
}

async function load(endpoint: string): Promise<{ statuses: Map<number, number>; counts: Counts }> {
  const gw = await startGateway(
    testConfig(upstream.url, {
      rate_limits: { classes: { read: { windows: [{ limit: 1_000_000, window_s: 3600 }] } } },
      tracing: { endpoint },
    }),
  );
  const keepAlive = agent();
  const statuses = new Map<number, number>();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < REQUESTS) {
      next++;
      const r = await request(`${gw.url}/v1/items`, {
        headers: { authorization: "Bearer valid-token" },
        agent: keepAlive,
      }).catch(() => ({ status: 0 }));
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  keepAlive.destroy();
  await gw.close();
  const m = parsePrometheusText(await gw.gateway.registry.metrics());
  return {
    statuses,
    counts: {
      exported: m.value("gateway_tracing_spans_exported_total"),
      queueFull: m.value("gateway_tracing_spans_dropped_total", { reason: "queue_full" }),
      exportFailed: m.value("gateway_tracing_spans_dropped_total", { reason: "export_failed" }),
    },
  };
}

describe("a collector that is down", () => {
  it("refusing connections: every request answered, every span counted as dropped", async () => {
    const { statuses, counts } = await load(`http://127.0.0.1:${REFUSED_PORT}/v1/traces`);
    expect(statuses).toEqual(new Map([[200, REQUESTS]]));
    expect(counts.exported).toBe(0);
    expect(counts.queueFull + counts.exportFailed).toBe(REQUESTS * SPANS_PER_REQUEST);
    expect(counts.exportFailed).toBeGreaterThan(0);
  });

  it("accepting and never answering: every request answered while exports hang, the full queue counted", async () => {
    let exportsHeld = 0;
    const hung: Server = http.createServer(() => {
      exportsHeld++; // never answered: the exporter times out
    });
    await new Promise<void>((resolve) => hung.listen(0, "127.0.0.1", resolve));
    try {
      const port = (hung.address() as AddressInfo).port;
      const { statuses, counts } = await load(`http://127.0.0.1:${port}/v1/traces`);
      expect(statuses).toEqual(new Map([[200, REQUESTS]]));
      expect(exportsHeld).toBeGreaterThan(0);
      expect(counts.exported).toBe(0);
      expect(counts.queueFull).toBeGreaterThan(0);
      expect(counts.exportFailed).toBeGreaterThan(0);
      expect(counts.queueFull + counts.exportFailed).toBe(REQUESTS * SPANS_PER_REQUEST);
    } finally {
      await closeServer(hung);
    }
  });
});
