/**
 * SPEC §18's outcome shape, shared by its test and `npm run bench:shedding`: an upstream that serves
 * 10 calls at once in 50 ms each and queues the rest in arrival order, a gateway in front of it with
 * or without the load shedding blocks, and an open-loop generator offering 600 calls/s, a fifth from
 * a critical plan (alice's `gold`) and the rest from a sheddable one (svc's `free`).
 */
import http, { type ServerResponse } from "node:http";
import { startGateway, testConfig, type TestGateway } from "./gateway.js";
import { request } from "./http.js";

/** The upstream's service time per call (ms). */
export const SERVICE_MS = 50;
/** Calls the upstream serves at once. */
export const SLOTS = 10;
/** The offered rate (calls/s). */
export const RATE_PER_S = 600;

/** One call the upstream served: when it arrived and its wait + service (ms). */
export interface Served {
  arrivedMs: number;
  latencyMs: number;
}

/** The queueing upstream's handler and what it saw. */
export interface QueueingUpstream {
  served: Served[];
  queued(): number;
  /** Answers everything queued at once, and every later call without service time. */
  drain(): void;
  handler(req: unknown, res: ServerResponse): void;
}

/** An upstream of {@link SLOTS} slots of {@link SERVICE_MS}, with a FIFO queue. */
export function queueingUpstream(): QueueingUpstream {
  const queue: { res: ServerResponse; arrivedMs: number }[] = [];
  const served: Served[] = [];
  let busy = 0;
  let draining = false;
  const start = (job: { res: ServerResponse; arrivedMs: number }): void => {
    busy++;
    setTimeout(() => {
      busy--;
      served.push({ arrivedMs: job.arrivedMs, latencyMs: performance.now() - job.arrivedMs });
      if (!job.res.destroyed) job.res.end("ok");
      const next = queue.shift();
      if (next !== undefined) start(next);
    }, SERVICE_MS);
  };
  return {
    served,
    queued: () => queue.length,
    drain: () => {
      draining = true;
      for (const job of queue.splice(0)) job.res.end("drained");
    },
    handler: (_req, res) => {
      if (draining) res.end("drained");
      else if (busy < SLOTS) start({ res, arrivedMs: performance.now() });
      else queue.push({ res, arrivedMs: performance.now() });
    },
  };
}

/** One offered call: its plan's priority, when it was sent (ms from the start) and its status (0: failed). */
export interface Sent {
  critical: boolean;
  sentMs: number;
  status: number;
}

/** Enough sockets for the queue a run without shedding builds (about 400 more calls a second). */
export const loadAgent = (): http.Agent => new http.Agent({ keepAlive: true, maxSockets: 4000 });

/**
 * Sends {@link RATE_PER_S} calls/s on schedule for `durationMs`, whatever the answers (open loop).
 * @returns every call's result, once all have answered
 */
export async function offer(url: string, durationMs: number, agent: http.Agent): Promise<Sent[]> {
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
          request(`${url}/v1/items`, {
            headers: { authorization: `Bearer ${critical ? "valid-token" : "client-token"}` },
            agent,
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

/** A gateway in front of `url`, with `adaptive_concurrency` and `load_shedding` or without. */
export function gatewayFor(url: string, shedding: boolean): Promise<TestGateway> {
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

/** The `q` quantile (0-1) of `values`. */
export const quantile = (values: readonly number[], q: number): number =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))]!;

/** The share of `calls` answered 200. */
export const successRate = (calls: readonly Sent[]): number =>
  calls.filter((s) => s.status === 200).length / calls.length;
