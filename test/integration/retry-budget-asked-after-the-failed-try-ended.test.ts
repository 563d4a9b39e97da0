/**
 * SPEC §17 retry budget: the try whose failure asks for a retry has ended when the budget is asked,
 * whether it failed with a listed status or without an answer. With `min_retries: 1` and no ratio,
 * one retry may be in flight at a time, so a call retried in sequence gets every attempt its route
 * allows either way (before the in-flight ledger, a 503 got 2 tries and a refused connection 4).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../gateway/observability/logger.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { logLines, type LogLines } from "../helpers/log-lines.js";
import { freePort } from "../helpers/redis-server.js";

let gw: TestGateway;
let log: LogLines;
let server: Awaited<ReturnType<typeof listen>>;
let unavailableCalls = 0;

beforeAll(async () => {
  server = await listen((_req: IncomingMessage, res: ServerResponse) => {
    unavailableCalls++;
    res.writeHead(503).end("unavailable");
  });
  const refused = `http://127.0.0.1:${await freePort()}`;
  const budget = { ratio: 0, min_retries: 1 };
  const upstream = { timeout_ms: 2000, retry_budget: budget, outlier_detection: { consecutive_failures: 0 } };
  const retries = { attempts: 3, backoff: { base_ms: 1, max_ms: 5 } };
  log = logLines();
  gw = await startGateway(
    testConfig(server.url, {
      upstreams: {
        unavailable: { url: server.url, ...upstream },
        refused: { url: refused, ...upstream },
      },
      routes: [
        { prefix: "/v1", upstream: "unavailable", retries },
        { prefix: "/v2", upstream: "refused", retries },
      ],
    }),
    { logger: createLogger("info", log.destination) },
  );
});

afterAll(async () => {
  await gw?.close();
  await closeServer(server.server);
});

const call = (path: string, id: string) =>
  request(`${gw.url}${path}`, { headers: { authorization: "Bearer valid-token", "x-request-id": id } });

describe("the retry budget", () => {
  it("is asked the same way after a listed status and after a refused connection", async () => {
    expect((await call("/v1/items", "status")).status).toBe(503);
    expect((await call("/v2/items", "refused")).status).toBe(502);
    const status = await log.waitFor((l) => l.reqId === "status");
    const refused = await log.waitFor((l) => l.reqId === "refused");
    expect([status.attempts, refused.attempts]).toEqual([4, 4]);
    expect(unavailableCalls).toBe(4);
    for (const name of ["unavailable", "refused"]) {
      expect(gw.gateway.runtime.upstreams.get(name)!.ledger).toEqual({
        callsAdmitted: 0,
        triesDispatched: 0,
        retries: 0,
      });
    }
  });
});
