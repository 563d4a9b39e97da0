/**
 * SPEC §16-§17 accounting: whatever way a call ends (answered, retried, timed out per try, refused
 * by max_in_flight, the client aborting before or during the answer, an endpoint answering 503 or
 * resetting), every count of the upstream's in-flight ledger returns to zero: its calls admitted,
 * its tries dispatched and retries (the retry budget's state), each endpoint's tries, and what the
 * admin listener shows of them.
 */
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen } from "../helpers/http.js";
import { prng } from "../helpers/prng.js";
import { waitFor } from "../helpers/redis-server.js";

const servers: Awaited<ReturnType<typeof listen>>[] = [];
let gw: TestGateway;

/** Each call's path says how its endpoint behaves: `ok`, `slow`, `503`, `reset`. */
function endpoint(req: IncomingMessage, res: ServerResponse): void {
  const how = req.url?.split("/").pop();
  req.resume();
  if (how === "reset") return void req.socket.destroy();
  if (how === "503") return void res.writeHead(503).end("unavailable");
  if (how === "slow") return void setTimeout(() => !res.destroyed && res.end("late"), 300);
  res.end("ok");
}

beforeAll(async () => {
  for (let i = 0; i < 2; i++) servers.push(await listen(endpoint));
  const base = testConfig(servers[0]!.url);
  const rl = base.rate_limits as { classes: Record<string, unknown> };
  rl.classes.read = { match: { methods: ["GET"] }, windows: [{ limit: 100_000, window_s: 3600 }] };
  gw = await startGateway({
    ...base,
    upstreams: {
      docs: {
        endpoints: servers.map((s) => ({ url: s.url })),
        timeout_ms: 5000,
        max_in_flight: 40,
        outlier_detection: { consecutive_failures: 0 },
      },
    },
    routes: [
      {
        prefix: "/v1",
        upstream: "docs",
        retries: { attempts: 2, per_try_timeout_ms: 150, backoff: { base_ms: 1, max_ms: 10 } },
      },
    ],
  });
});

afterAll(async () => {
  await gw?.close();
  for (const s of servers) await closeServer(s.server);
});

/** One call; the client may go away before or during the answer. */
function call(how: string, abortAfterMs: number | null): Promise<void> {
  return new Promise((resolve) => {
    const req = http.get(
      `${gw.url}/v1/x/${how}`,
      { headers: { authorization: "Bearer valid-token" }, agent: false },
      (res) => {
        res.on("data", () => {});
        res.on("end", resolve);
        res.on("error", () => resolve());
        res.on("close", resolve);
      },
    );
    req.on("error", () => resolve());
    req.on("close", () => resolve());
    if (abortAfterMs !== null) setTimeout(() => req.destroy(), abortAfterMs);
  });
}

describe("the exchange's counts", () => {
  it("all return to zero after 2,000 calls ending every way", async () => {
    const next = prng(0x5eed);
    const kinds = ["ok", "ok", "slow", "503", "reset"];
    let sent = 0;
    await Promise.all(
      Array.from({ length: 60 }, async () => {
        while (sent < 2000) {
          sent++;
          const how = kinds[Math.floor(next() * kinds.length)]!;
          const abort = next() < 0.2 ? Math.floor(next() * 200) : null;
          await call(how, abort);
        }
      }),
    );
    const upstream = gw.gateway.runtime.upstreams.get("docs")!;
    await waitFor(
      "every count at zero",
      async () =>
        upstream.endpoints.every((e) => e.inFlight === 0) &&
        upstream.ledger.triesDispatched === 0 &&
        upstream.ledger.retries === 0 &&
        upstream.ledger.callsAdmitted === 0 &&
        gw.gateway.runtime.generation.calls === 0,
      10_000,
    );
    expect(upstream.ledger).toEqual({ callsAdmitted: 0, triesDispatched: 0, retries: 0 });
    const view = gw.gateway.upstreams().docs!;
    expect([view.in_flight, ...view.endpoints.map((e) => e.in_flight)]).toEqual([0, 0, 0]);
  }, 120_000);
});
