/**
 * SPEC §18's outcome, measured end to end: an upstream that serves 10 calls at once in 50 ms each
 * and queues the rest in arrival order, offered 600 calls/s at a constant rate (open loop), a fifth
 * from a critical plan and the rest from a sheddable one. With the blocks, once the limit has
 * adapted (10 s) the admitted calls' latency at the upstream stays within 3× its no-load latency at
 * p90 and critical callers get at least 95 % 2xx; without them nothing is shed and the upstream's
 * queue grows. Bounded: 15 s with the blocks, 4 s without.
 */
import http, { type ServerResponse } from "node:http";
import { afterAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";

const SERVICE_MS = 50;
const SLOTS = 10;
const RATE_PER_S = 600;

/** The upstream: 10 slots of 50 ms, a FIFO queue; each admitted call's wait + service recorded. */
function queueingUpstream() {
  const queue: { res: ServerResponse; arrivedMs: number }[] = [];
  const served: { arrivedMs: number; latencyMs: number }[] = [];
  let busy = 0;
  let draining = false;
  const start = (job: { res: ServerResponse; arrivedMs: number }): void => {
    busy++;
    setTimeout(
      () => {
        busy--;
        served.push({ arrivedMs: job.arrivedMs, latencyMs: performance.now() - job.arrivedMs });
        if (!job.res.destroyed) job.res.end("ok");
        const next = queue.shift();
        if (next !== undefined) start(next);
      },
      draining ? 0 : SERVICE_MS,
    );
  };
  return {
    served,
    queued: () => queue.length,
    drain: () => {
      draining = true;
      for (const job of queue.splice(0)) job.res.end("drained");
    },
    handler: (_req: unknown, res: ServerResponse) => {
      const job = { res, arrivedMs: performance.now() };
      if (busy < SLOTS && !draining) start(job);
      else if (draining) res.end("drained");
      else queue.push(job);
    },
  };
}

/** Enough sockets for the queue the run without shedding builds (about 1,600 calls). */
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 4000 });
afterAll(() => keepAlive.destroy());

interface Sent {
  critical: boolean;
  sentMs: number;
  status: number;
}

/** Sends 600 calls/s on schedule for `durationMs`, whatever the answers; resolves with every result. */
async function offer(g: TestGateway, durationMs: number): Promise<Sent[]> {
  const results: Promise<Sent>[] = [];
  const t0 = performance.now();
  await new Promise<void>((done) => {
    const timer = setInterval(() => {
      const elapsed = performance.now() - t0;
      const due = Math.floor((Math.min(elapsed, durationMs) * RATE_PER_S) / 1000);
      while (results.length < due) {
        const critical = results.length % 5 === 0;
        const sentMs = performance.now() - t0;
        results.push(
          request(`${g.url}/v1/items`, {
            headers: { authorization: `Bearer ${critical ? "valid-token" : "client-token"}` },
            agent: keepAlive,
          }).then(
            (r) => ({ critical, sentMs, status: r.status }),
            () => ({ critical, sentMs, status: 0 }),
          ),
        );
      }
      if (elapsed >= durationMs) {
        clearInterval(timer);
        done();
      }
    }, 5);
  });
  return Promise.all(results);
}

async function gatewayFor(url: string, shedding: boolean): Promise<TestGateway> {
  const base = testConfig(url);
  const rl = base.rate_limits as { classes: Record<string, unknown> } & Record<string, unknown>;
  rl.classes.read = { match: { methods: ["GET"] }, windows: [{ limit: 1_000_000, window_s: 3600 }] };
  rl.plans = { gold: {}, free: {} };
  rl.consumers = [
    { sub: "alice", plan: "gold" },
    { client_id: "svc", plan: "free" },
  ];
  const docs = { url, timeout_ms: 60_000, max_sockets: 4000 };
  return startGateway({
    ...base,
    upstreams: {
      docs: shedding ? { ...docs, adaptive_concurrency: { min_limit: 5, max_limit: 1000 } } : docs,
    },
    ...(shedding ? { load_shedding: { priorities: { gold: "critical", free: "sheddable" } } } : {}),
  });
}

const p90 = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length * 0.9)]!;

describe("load shedding's outcome (SPEC §18)", () => {
  it("keeps the admitted latency within 3× no-load and critical callers at >= 95 % 2xx", async () => {
    const upstream = queueingUpstream();
    const server = await listen(upstream.handler);
    const g = await gatewayFor(server.url, true);
    try {
      const sent = await offer(g, 15_000);
      const late = (s: Sent) => s.sentMs >= 10_000;
      const critical = sent.filter((s) => s.critical && late(s));
      const sheddable = sent.filter((s) => !s.critical && late(s));
      const ok = (xs: Sent[]) => xs.filter((s) => s.status === 200).length / xs.length;
      expect(ok(critical)).toBeGreaterThanOrEqual(0.95);
      expect(ok(sheddable)).toBeLessThan(0.5); // they absorb the shedding
      expect(sent.every((s) => s.status === 200 || s.status === 503)).toBe(true);
      const t0 = upstream.served[0]!.arrivedMs;
      const admitted = upstream.served.filter((s) => s.arrivedMs - t0 >= 10_000).map((s) => s.latencyMs);
      expect(admitted.length).toBeGreaterThan(500);
      expect(p90(admitted)).toBeLessThanOrEqual(3 * SERVICE_MS);
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
      const sending = offer(g, 4_000);
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
