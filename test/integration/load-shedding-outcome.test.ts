/**
 * SPEC §18's outcome, measured end to end (test/helpers/shedding-load.ts): an upstream that serves
 * 10 calls at once in 50 ms each and queues the rest in arrival order, offered 600 calls/s at a
 * constant rate (open loop), a fifth from a critical plan and the rest from a sheddable one. With
 * the blocks, once the limit has adapted (10 s) the admitted calls' latency at the upstream stays
 * within 3× its no-load latency at p90 and critical callers get at least 95 % 2xx; without them
 * nothing is shed and the upstream's queue grows. Bounded: 15 s with the blocks, 4 s without.
 */
import { afterAll, describe, expect, it } from "vitest";
import { closeServer, listen } from "../helpers/http.js";
import {
  gatewayFor,
  loadAgent,
  offer,
  quantile,
  queueingUpstream,
  SERVICE_MS,
  successRate,
  type Sent,
} from "../helpers/shedding-load.js";

const agent = loadAgent();
afterAll(() => agent.destroy());

describe("load shedding's outcome (SPEC §18)", () => {
  it("keeps the admitted latency within 3× no-load and critical callers at >= 95 % 2xx", async () => {
    const upstream = queueingUpstream();
    const server = await listen(upstream.handler);
    const g = await gatewayFor(server.url, true);
    try {
      const sent = await offer(g.url, 15_000, agent);
      const late = (s: Sent) => s.sentMs >= 10_000;
      expect(successRate(sent.filter((s) => s.critical && late(s)))).toBeGreaterThanOrEqual(0.95);
      // The sheddable callers absorb the shedding.
      expect(successRate(sent.filter((s) => !s.critical && late(s)))).toBeLessThan(0.5);
      expect(sent.every((s) => s.status === 200 || s.status === 503)).toBe(true);
      const t0 = upstream.served[0]!.arrivedMs;
      const admitted = upstream.served.filter((s) => s.arrivedMs - t0 >= 10_000).map((s) => s.latencyMs);
      expect(admitted.length).toBeGreaterThan(500);
      expect(quantile(admitted, 0.9)).toBeLessThanOrEqual(3 * SERVICE_MS);
    } finally {
      upstream.drain();
      await g.close();
      await closeServer(server.server);
    }
  }, 60_000);

  it("without the blocks sheds nothing, and the upstream's queue grows without bound", async () => {
    const upstream = queueingUpstream();
    const server = await listen(upstream.handler);
    const g = await gatewayFor(server.url, false);
    try {
      const queued: number[] = [];
      const sampler = setInterval(() => queued.push(upstream.queued()), 1000);
      const sending = offer(g.url, 4_000, agent);
      await new Promise((r) => setTimeout(r, 4_000));
      clearInterval(sampler);
      upstream.drain();
      const sent = await sending;
      expect(sent.every((s) => s.status === 200)).toBe(true);
      // 600 offered, 200 served per second: the queue only grows.
      expect(queued.length).toBeGreaterThanOrEqual(3);
      for (let i = 1; i < queued.length; i++) expect(queued[i]).toBeGreaterThan(queued[i - 1]!);
      expect(queued[queued.length - 1]).toBeGreaterThan(600);
    } finally {
      upstream.drain();
      await g.close();
      await closeServer(server.server);
    }
  }, 60_000);
});
