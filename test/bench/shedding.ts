/**
 * `npm run bench:shedding`: SPEC §18's outcome shape run twice, with and without
 * the load shedding blocks, side by side: the upstream's latency (queue wait plus service) at p50,
 * p90 and p99 once adapted (calls it finished after the first 10 s), and each plan's success rate
 * over the calls sent from then on (without shedding every call is answered 200, the queued ones
 * only when the run drains the queue). 15 s of 600 calls/s per run, gateway, upstream and generator in this process
 * (test/helpers/shedding-load.ts); the table goes to stdout and to runs/last-run-shedding.md.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { closeServer, listen } from "../helpers/http.js";
import {
  gatewayFor,
  loadAgent,
  offer,
  quantile,
  queueingUpstream,
  RATE_PER_S,
  SERVICE_MS,
  SLOTS,
  successRate,
} from "../helpers/shedding-load.js";

const RUN_MS = 15_000;
const ADAPTED_MS = 10_000;
const OUT = fileURLToPath(new URL("./runs/last-run-shedding.md", import.meta.url));

/** One run's row. */
async function run(shedding: boolean): Promise<string> {
  const upstream = queueingUpstream();
  const server = await listen(upstream.handler);
  const g = await gatewayFor(server.url, shedding);
  const agent = loadAgent();
  try {
    const sending = offer(g.url, RUN_MS, agent);
    // Without shedding the queue never drains: read it at the end of the offer, then drain.
    await new Promise((r) => setTimeout(r, RUN_MS));
    const queued = upstream.queued();
    const t0 = upstream.served[0]?.arrivedMs ?? 0;
    // Calls the upstream finished from 10 s on (without shedding, those that arrived later are
    // still queued).
    const admitted = upstream.served
      .filter((s) => s.arrivedMs + s.latencyMs - t0 >= ADAPTED_MS)
      .map((s) => s.latencyMs);
    upstream.drain();
    const sent = (await sending).filter((s) => s.sentMs >= ADAPTED_MS);
    const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
    const ms = (x: number) => (admitted.length === 0 ? "-" : `${quantile(admitted, x).toFixed(0)} ms`);
    return (
      `| ${shedding ? "adaptive_concurrency + load_shedding" : "neither block"} | ${ms(0.5)} | ${ms(0.9)} | ` +
      `${ms(0.99)} | ${pct(successRate(sent.filter((s) => s.critical)))} | ` +
      `${pct(successRate(sent.filter((s) => !s.critical)))} | ${queued} |`
    );
  } finally {
    upstream.drain();
    await g.close();
    agent.destroy();
    await closeServer(server.server);
  }
}

const rows = [await run(false), await run(true)];
const table = [
  `Upstream: ${SLOTS} calls at once, ${SERVICE_MS} ms each, FIFO queue; offered ${RATE_PER_S} calls/s ` +
    `(open loop, a fifth critical) for ${RUN_MS / 1000} s; latencies of the calls the upstream finished, and success rates of the calls sent, from ${ADAPTED_MS / 1000} s on.`,
  "",
  "| Gateway | upstream p50 | p90 | p99 | critical 2xx | sheddable 2xx | upstream queue at the end |",
  "| --- | --- | --- | --- | --- | --- | --- |",
  ...rows,
  "",
].join("\n");
process.stdout.write(table);
writeFileSync(OUT, `# Load shedding, side by side (${new Date().toISOString()})\n\n${table}`);
