/**
 * SPEC §23 security: only the decision listener reads `X-Forwarded-Method`/`-Uri` and
 * `X-Original-Method`/`-URI`. On the API listener a client sending them routes, classifies and is
 * counted by its real method and path, and the upstream receives the real path; a client's
 * `X-Forwarded-For` does not pick its budget there either (`trust_proxy: 0`).
 */
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";

let upstream: { server: Server; url: string };
const paths: string[] = [];
let gw: TestGateway;

beforeAll(async () => {
  upstream = await listen((req, res) => {
    paths.push(`${req.method} ${req.url}`);
    res.end("ok");
  });
  gw = await startGateway(
    testConfig(upstream.url, {
      decision: { listen: { host: "127.0.0.1", port: 0 } },
      routes: [
        { prefix: "/v1", upstream: "docs" },
        { prefix: "/private", upstream: "docs", scopes: ["admin"] },
      ],
      rate_limits: {
        classes: {
          search: { match: { paths: ["/v1/search"] }, windows: [{ limit: 100, window_s: 60 }] },
          read: { match: { methods: ["GET"] }, windows: [{ limit: 100, window_s: 60 }] },
          write: { match: { methods: ["POST", "DELETE"] }, windows: [{ limit: 100, window_s: 60 }] },
        },
        anonymous: { windows: [{ limit: 10, window_s: 60 }] },
      },
    }),
  );
});

afterAll(async () => {
  await gw.close();
  await closeServer(upstream.server);
});

const fields = {
  "x-forwarded-method": "DELETE",
  "x-forwarded-uri": "/v1/search",
  "x-original-method": "POST",
  "x-original-uri": "/private/admin",
};

describe("the API listener", () => {
  it("routes, classifies and forwards by the request's own method and path", async () => {
    const res = await request(`${gw.url}/v1/user`, {
      headers: { authorization: "Bearer valid-token", ...fields },
    });
    expect(res.status).toBe(200);
    expect(res.headers["x-ratelimit-resource"]).toBe("read");
    expect(paths.at(-1)).toBe("GET /v1/user");
  });

  it("a path no route matches stays 404 whatever the fields name", async () => {
    const res = await request(`${gw.url}/decide`, {
      headers: { authorization: "Bearer valid-token", "x-original-uri": "/v1/user" },
    });
    expect(res.status).toBe(404);
  });

  it("counts anonymous calls by the socket address, whatever X-Forwarded-For says", async () => {
    const remaining: string[] = [];
    for (const xff of ["198.51.100.1", "198.51.100.2", "198.51.100.3"]) {
      const res = await request(`${gw.url}/v1/user`, { headers: { ...fields, "x-forwarded-for": xff } });
      expect(res.status).toBe(401);
      remaining.push(res.headers["x-ratelimit-remaining"] as string);
    }
    // One budget, 127.0.0.1's: each call leaves one less, whichever address it claims.
    const left = remaining.map(Number);
    expect(left).toEqual([left[0], left[0]! - 1, left[0]! - 2]);
  });
});
