/**
 * SPEC §23: `listen.enabled: false` turns the API listener off for a decision-only deployment: its
 * port is never bound, while the decision listener and the admin listener serve. The decision
 * listener sits behind the edge proxy: the client address it counts anonymous calls by is the
 * one the edge appended to `X-Forwarded-For` (one hop more than `trust_proxy`).
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { parseConfig } from "../../gateway/config/load.js";
import { freePorts } from "../helpers/child-gateway.js";
import { FIXTURES, startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { request } from "../helpers/http.js";

let gw: TestGateway;
let apiPort: number;

beforeAll(async () => {
  [apiPort] = (await freePorts(1)) as [number];
  gw = await startGateway(
    testConfig("http://127.0.0.1:1", {
      listen: { host: "127.0.0.1", port: apiPort, enabled: false },
      decision: { listen: { host: "127.0.0.1", port: 0 } },
      rate_limits: {
        classes: { read: { windows: [{ limit: 10, window_s: 60 }] } },
        anonymous: { windows: [{ limit: 3, window_s: 60 }] },
      },
    }),
  );
});

afterAll(async () => {
  await gw.close();
});

/** Resolves true when something accepts a TCP connection on 127.0.0.1:`port`. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

describe("listen.enabled: false", () => {
  it("binds no API listener: listen() reports port 0 and listen.port refuses connections", async () => {
    expect(gw.apiPort).toBe(0);
    expect(await accepts(apiPort)).toBe(false);
  });

  it("the decision listener decides, the admin listener answers", async () => {
    const res = await request(`${gw.decisionUrl}/decide`, {
      headers: {
        authorization: "Bearer valid-token",
        "x-original-method": "GET",
        "x-original-uri": "/v1/user",
      },
    });
    expect(res.status).toBe(200);
    expect(res.headers["x-ratelimit-resource"]).toBe("read");
    expect((await request(`${gw.adminUrl}/healthz`)).status).toBe(200);
  });
});

describe("a decision port that cannot be bound", () => {
  it("stops the start with an error naming the decision listener and its key", async () => {
    const port = Number(new URL(gw.decisionUrl).port);
    const err = await startGateway(
      testConfig("http://127.0.0.1:1", { decision: { listen: { host: "127.0.0.1", port } } }),
    ).then(
      (g) => g.close().then(() => null),
      (e: unknown) => e as Error,
    );
    expect(err?.message).toBe(
      `the decision listener cannot bind 127.0.0.1:${port} (decision.listen.host, decision.listen.port): EADDRINUSE (another process holds the port)`,
    );
  });
});

describe("the client address of a decision", () => {
  it("is the X-Forwarded-For entry the edge appended: each client its own anonymous budget", async () => {
    const ask = (xff: string) =>
      request(`${gw.decisionUrl}/decide`, {
        headers: { "x-original-method": "GET", "x-original-uri": "/v1/user", "x-forwarded-for": xff },
      });
    const remaining: string[] = [];
    // A client-sent entry before the edge's own cannot choose the budget.
    for (const xff of ["198.51.100.1", "6.6.6.6, 198.51.100.1", "198.51.100.2"]) {
      const res = await ask(xff);
      expect(res.status).toBe(401);
      remaining.push(res.headers["x-ratelimit-remaining"] as string);
    }
    expect(remaining).toEqual(["2", "1", "2"]);
  });
});

describe("a reload", () => {
  it("applies decision.path and decision.nginx_status to the next question", async () => {
    const g = await startGateway(
      testConfig("http://127.0.0.1:1", { decision: { listen: { host: "127.0.0.1", port: 0 } } }),
    );
    try {
      const next = testConfig("http://127.0.0.1:1", {
        decision: { listen: { host: "127.0.0.1", port: 0 }, path: "/ask", nginx_status: true },
      });
      g.gateway.prepare({ config: parseConfig(stringify(next), "test"), baseDir: FIXTURES }).commit();
      const headers = { "x-original-method": "GET", "x-original-uri": "/nowhere" };
      expect((await request(`${g.decisionUrl}/decide`, { headers })).status).toBe(404);
      const res = await request(`${g.decisionUrl}/ask`, { headers });
      expect(res.status).toBe(403);
      expect(res.headers["x-gateway-status"]).toBe("404");
    } finally {
      await g.close();
    }
  });
});
