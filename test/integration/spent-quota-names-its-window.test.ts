/**
 * A 429 from a calendar window says which window (SPEC §19): the body keeps SPEC §2's message,
 * while the access line (`window`), the IETF `RateLimit` field's item and
 * `gateway_ratelimit_decisions_total{window}` tell a spent month's quota from a burst.
 * A real gateway on the memory store with an injected clock; the static tokens file.
 */
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../gateway/base/clock.js";
import { captureLog } from "../helpers/access-lines.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request, type TestResponse } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";

/** 2026-05-10 12:00 UTC: the month ends on June 1. */
const NOW = Date.UTC(2026, 4, 10, 12);
let upstream: { server: Server; url: string };
let gw: TestGateway;
const log = captureLog();

beforeAll(async () => {
  upstream = await listen((_req, res) => res.end("ok"));
  gw = await startGateway(
    testConfig(upstream.url, {
      headers: { ietf: true },
      rate_limits: {
        classes: {
          read: {
            match: { methods: ["GET"] },
            windows: [
              { limit: 10, window_s: 60 },
              { limit: 2, period: "month" },
            ],
          },
          write: {
            match: { methods: ["POST"] },
            windows: [
              { limit: 1, window_s: 60 },
              { limit: 100, period: "month" },
            ],
          },
        },
      },
    }),
    { clock: new ManualClock(NOW), logger: log.logger },
  );
});

afterAll(async () => {
  await gw.close();
  await closeServer(upstream.server);
});

const call = (method: string): Promise<TestResponse> =>
  request(`${gw.url}/v1/items`, { method, headers: { authorization: "Bearer valid-token" } });

describe("a refusal names the window that refused it", () => {
  let quota: TestResponse;
  let burst: TestResponse;

  beforeAll(async () => {
    await call("GET");
    await call("GET");
    quota = await call("GET");
    await call("POST");
    burst = await call("POST");
  });

  it("keeps SPEC's body and tells the month's quota from a burst in the RateLimit field", () => {
    expect([quota.status, burst.status]).toEqual([429, 429]);
    const retryAfter = (Date.UTC(2026, 5, 1) - NOW) / 1000;
    expect(JSON.parse(quota.body)).toEqual({
      error: { code: 429, message: `API rate limit exceeded. Please try again in ${retryAfter} seconds` },
    });
    expect(quota.headers["ratelimit"]).toBe(`"read-month";r=0;t=${retryAfter}`);
    expect(String(burst.headers["ratelimit"])).toMatch(/^"write-60s";r=0;t=\d+$/);
  });

  it("writes the refusing window in the access line, only on refusals", () => {
    const lines = log.accessLines(gw);
    expect(lines.map((l) => [l.status, l.window ?? null])).toEqual([
      [200, null],
      [200, null],
      [429, "month"],
      [200, null],
      [429, "60s"],
    ]);
    expect(lines[2]!.limited_by).toBe("identity");
  });

  it("labels the decisions metric with the refusing window (none when admitted)", async () => {
    const m = await scrape(gw.adminUrl);
    const rows = m
      .select("gateway_ratelimit_decisions_total")
      .map((s) => `${s.labels.class} ${s.labels.outcome} ${s.labels.window} ${s.value}`)
      .sort();
    expect(rows).toEqual([
      "read allowed none 2",
      "read limited month 1",
      "write allowed none 1",
      "write limited 60s 1",
    ]);
  });
});
