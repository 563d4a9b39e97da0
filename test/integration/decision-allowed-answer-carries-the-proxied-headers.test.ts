/**
 * SPEC §23 allowed answers: 200, empty body, the rate-limit fields the proxied answer would carry
 * (the IETF pair too with `headers.ietf`), the identity fields the upstream would get (client copies
 * never echoed), and the request id; a class in `mode: shadow` is allowed over its limit, as it
 * would be proxied. Compared with what the upstream and the client of a twin API listener see.
 */
import type { IncomingHttpHeaders, Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";

let upstream: { server: Server; url: string };
const seen: IncomingHttpHeaders[] = [];
let gw: TestGateway;
let twin: TestGateway;

const overrides = {
  decision: { listen: { host: "127.0.0.1", port: 0 } },
  headers: { ietf: true },
  rate_limits: {
    classes: {
      trial: { match: { paths: ["/v1/trial"] }, mode: "shadow", windows: [{ limit: 1, window_s: 60 }] },
      read: { match: { methods: ["GET"] }, windows: [{ limit: 10, window_s: 60 }] },
    },
    anonymous: { windows: [{ limit: 10, window_s: 60 }] },
  },
};

beforeAll(async () => {
  upstream = await listen((req, res) => {
    seen.push(req.headers);
    res.end("ok");
  });
  [gw, twin] = await Promise.all([
    startGateway(testConfig(upstream.url, overrides)),
    startGateway(testConfig(upstream.url, overrides)),
  ]);
});

afterAll(async () => {
  await Promise.all([gw.close(), twin.close()]);
  await closeServer(upstream.server);
});

const ask = (target: string, headers: Record<string, string>) =>
  request(`${gw.decisionUrl}/decide`, {
    headers: { "x-forwarded-method": "GET", "x-forwarded-uri": target, ...headers },
  });

describe("an allowed decision", () => {
  it("carries what the proxied answer and the upstream request would: rate-limit, IETF, identity, id", async () => {
    const client = {
      authorization: "Bearer reader-token",
      "x-auth-scope": "admin",
      "x-request-id": "allowed-1",
    };
    const decided = await ask("/v1/user", client);
    const direct = await request(`${twin.url}/v1/user`, {
      headers: { ...client, "x-request-id": "allowed-2" },
    });
    const up = seen.at(-1)!;
    expect(decided.status).toBe(200);
    expect(decided.body).toBe("");
    expect(decided.headers["content-length"]).toBe("0");
    for (const name of [
      "x-ratelimit-limit",
      "x-ratelimit-remaining",
      "x-ratelimit-resource",
      "ratelimit-policy",
    ]) {
      expect(decided.headers[name], name).toBe(direct.headers[name]);
    }
    expect(decided.headers.ratelimit).toMatch(/^"[^"]+";r=9;t=\d+$/);
    expect(decided.headers["x-auth-subject"]).toBe(up["x-auth-subject"]);
    expect(decided.headers["x-auth-client-id"]).toBe(up["x-auth-client-id"]);
    expect(decided.headers["x-auth-scope"]).toBe("read");
    expect(decided.headers["x-request-id"]).toBe("allowed-1");
    expect(decided.headers["x-gateway-status"]).toBeUndefined();
  });

  it("a shadow class over its limit is allowed, as it would be proxied", async () => {
    const auth = { authorization: "Bearer valid-token" };
    const first = await ask("/v1/trial", auth);
    const second = await ask("/v1/trial", auth);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.headers["x-ratelimit-resource"]).toBe("trial");
    expect(second.headers["x-ratelimit-remaining"]).toBe("0");
  });
});
