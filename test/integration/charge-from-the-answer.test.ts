/**
 * Units charged by the upstream's answer (SPEC §22 `charge`): an answer carrying `X-Usage-Units`
 * spends that many more units from the call's windows before its head is relayed, so the headers
 * the client gets already show them; the header never reaches the client; a charge is capped at
 * `max` and never refused (it may take a window past its limit, and the next call is refused); a
 * missing or malformed value charges nothing and is counted; the units are counted by kind. The
 * body streams through untouched, whether it arrived before or after the charge was counted.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request, type TestResponse } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";

let upstream: Awaited<ReturnType<typeof listen>>;
let gw: TestGateway;
const BODY = "row\n".repeat(50_000);

/** `?units=<value>` becomes the answer's X-Usage-Units (absent without it). */
function answer(req: IncomingMessage, res: ServerResponse): void {
  const units = new URL(req.url!, "http://x").searchParams.get("units");
  if (units !== null) res.setHeader("X-Usage-Units", units);
  res.setHeader("Content-Type", "text/plain");
  res.end(BODY);
}

beforeAll(async () => {
  upstream = await listen(answer);
  gw = await startGateway(
    testConfig(upstream.url, {
      rate_limits: {
        classes: {
          export: {
            match: { paths: ["/v1/export"] },
            windows: [{ limit: 100, window_s: 3600 }],
            cost: 2,
            charge: { header: "X-Usage-Units", max: 50 },
          },
          read: { match: { methods: ["GET"] }, windows: [{ limit: 100, window_s: 3600 }] },
        },
        anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
      },
    }),
  );
});

afterAll(async () => {
  await gw?.close();
  await closeServer(upstream.server);
});

const exportCall = (token: string, units?: string): Promise<TestResponse> =>
  request(`${gw.url}/v1/export${units === undefined ? "" : `?units=${units}`}`, {
    headers: { authorization: `Bearer ${token}` },
  });

describe("charge from the answer", () => {
  it("spends the answer's units before its head goes out, removes the header, caps at max, never refuses", async () => {
    const first = await exportCall("valid-token", "30");
    expect(first.status).toBe(200);
    expect(first.body).toBe(BODY);
    expect(first.headers["x-usage-units"]).toBeUndefined();
    expect(first.headers["x-ratelimit-remaining"]).toBe(String(100 - 2 - 30));
    // 1000 is capped at 50.
    const capped = await exportCall("valid-token", "1000");
    expect(capped.headers["x-ratelimit-remaining"]).toBe(String(68 - 2 - 50));
    // 16 left: admitted (cost 2), then 40 charged past the limit: never refused.
    const past = await exportCall("valid-token", "40");
    expect(past.status).toBe(200);
    expect(past.body).toBe(BODY);
    expect(past.headers["x-ratelimit-remaining"]).toBe("0");
    // The charge applies to the next call: refused until enough of the window has passed.
    const next = await exportCall("valid-token", "1");
    expect(next.status).toBe(429);
    expect(next.headers["x-ratelimit-remaining"]).toBe("0");
    const m = await scrape(gw.adminUrl);
    expect(m.sum("gateway_ratelimit_units_total", { class: "export", kind: "charge" })).toBe(30 + 50 + 40);
    expect(m.sum("gateway_ratelimit_units_total", { class: "export", kind: "cost" })).toBe(3 * 2);
  });

  it("a missing, malformed or negative charge charges nothing and is counted", async () => {
    const before = (await scrape(gw.adminUrl)).sum("gateway_ratelimit_charge_invalid_total", {
      class: "export",
    });
    const seen: string[] = [];
    for (const units of [undefined, "abc", "-5", "1.5"]) {
      const r = await exportCall("reader-token", units);
      expect(r.status).toBe(200);
      expect(r.body).toBe(BODY);
      expect(r.headers["x-usage-units"]).toBeUndefined();
      seen.push(String(r.headers["x-ratelimit-remaining"]));
    }
    // Each call spent its cost only.
    expect(seen).toEqual(["98", "96", "94", "92"]);
    const after = (await scrape(gw.adminUrl)).sum("gateway_ratelimit_charge_invalid_total", {
      class: "export",
    });
    expect(after - before).toBe(4);
    // Zero is a valid charge of nothing.
    const zero = await exportCall("reader-token", "0");
    expect(zero.headers["x-ratelimit-remaining"]).toBe("90");
    expect(
      (await scrape(gw.adminUrl)).sum("gateway_ratelimit_charge_invalid_total", { class: "export" }),
    ).toBe(after);
  });

  it("a class without a charge relays the header as the upstream sent it", async () => {
    const r = await request(`${gw.url}/v1/items?units=7`, {
      headers: { authorization: "Bearer client-token" },
    });
    expect(r.status).toBe(200);
    expect(r.headers["x-usage-units"]).toBe("7");
    expect(r.headers["x-ratelimit-remaining"]).toBe("99");
  });
});
