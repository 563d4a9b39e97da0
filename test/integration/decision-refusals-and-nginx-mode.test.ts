/**
 * SPEC §23 refusals: a refused decision is the answer the gateway would have given on its API
 * listener (status, JSON body, `WWW-Authenticate`, `Retry-After`, rate-limit fields) plus
 * `X-Gateway-Status`. In nginx mode (`?nginx=1`, or `decision.nginx_status: true`) every refusal but
 * 401 is answered 403, since nginx's `auth_request` accepts only 2xx, 401 and 403 from its
 * subrequest; the real status stays in `X-Gateway-Status` and the body travels in `X-Gateway-Body`
 * (the module discards the subrequest's body). Each answer is compared with what the API listener
 * of a twin gateway answers to the same call.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { request, type TestResponse } from "../helpers/http.js";
import { RedisServer } from "../helpers/redis-server.js";

let gw: TestGateway;
let nginxAlways: TestGateway;
let twin: TestGateway;

const overrides = (decision: Record<string, unknown>) => ({
  decision: { listen: { host: "127.0.0.1", port: 0 }, ...decision },
  routes: [
    { prefix: "/v1", upstream: "docs" },
    { prefix: "/admin", upstream: "docs", scopes: ["admin"] },
  ],
});

beforeAll(async () => {
  // Nothing listens upstream: a decision never calls it.
  [gw, nginxAlways, twin] = await Promise.all([
    startGateway(testConfig("http://127.0.0.1:1", overrides({}))),
    startGateway(testConfig("http://127.0.0.1:1", overrides({ nginx_status: true }))),
    startGateway(testConfig("http://127.0.0.1:1", overrides({}))),
  ]);
});

afterAll(async () => {
  await Promise.all([gw.close(), nginxAlways.close(), twin.close()]);
});

/** Asks `g` about `method target` in the nginx convention. */
function ask(
  g: TestGateway,
  method: string,
  target: string,
  headers: Record<string, string> = {},
  query = "",
) {
  return request(`${g.decisionUrl}/decide${query}`, {
    headers: { "x-original-method": method, "x-original-uri": target, ...headers },
  });
}

/** The fields a refusal shares with the API listener's answer (ids and times aside). */
function shape(res: TestResponse) {
  return {
    status: res.status,
    body: res.body,
    type: res.headers["content-type"],
    challenge: res.headers["www-authenticate"],
    limit: res.headers["x-ratelimit-limit"],
    resource: res.headers["x-ratelimit-resource"],
    remaining: res.headers["x-ratelimit-remaining"],
  };
}

describe("refused: the gateway's own answer plus X-Gateway-Status", () => {
  it.each([
    ["no Authorization", "GET", "/v1/user", {}, 401],
    ["a malformed Authorization", "GET", "/v1/user", { authorization: "Basic abc" }, 400],
    ["an unknown token", "GET", "/v1/user", { authorization: "Bearer nobody-token" }, 401],
    ["a scope the token lacks", "GET", "/admin/users", { authorization: "Bearer reader-token" }, 403],
    ["no route", "GET", "/nowhere", { authorization: "Bearer valid-token" }, 404],
  ] as const)("%s: %s %s -> %i, as on the API listener", async (_what, method, target, headers, status) => {
    const decided = await ask(gw, method, target, headers);
    const direct = await request(`${twin.url}${target}`, { method, headers });
    expect(decided.status).toBe(status);
    expect(decided.headers["x-gateway-status"]).toBe(String(status));
    expect(decided.headers["x-gateway-body"]).toBeUndefined();
    expect(shape(decided)).toEqual(shape(direct));
  });

  it("429 with Retry-After once the class is spent, body and fields as the API listener's", async () => {
    const auth = { authorization: "Bearer valid-token" };
    for (let i = 0; i < 3; i++) expect((await ask(gw, "POST", "/v1/pages", auth)).status).toBe(200);
    for (let i = 0; i < 3; i++)
      expect((await request(`${twin.url}/v1/pages`, { method: "POST", headers: auth })).status).toBe(502);
    const decided = await ask(gw, "POST", "/v1/pages", auth);
    const direct = await request(`${twin.url}/v1/pages`, { method: "POST", headers: auth });
    expect(decided.status).toBe(429);
    expect(decided.headers["x-gateway-status"]).toBe("429");
    expect(Number(decided.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(decided.headers["x-ratelimit-remaining"]).toBe("0");
    expect(JSON.parse(decided.body).error.code).toBe(429);
    expect(shape(decided)).toEqual({ ...shape(direct), body: decided.body });
    expect(decided.body).toMatch(
      /^\{"error":\{"code":429,"message":"API rate limit exceeded\. Please try again in \d+ seconds"\}\}$/,
    );
  });
});

describe("nginx mode", () => {
  it("?nginx=1: a 404 is answered 403, the real status and body in X-Gateway-Status/-Body", async () => {
    const res = await ask(gw, "GET", "/nowhere", { authorization: "Bearer valid-token" }, "?nginx=1");
    expect(res.status).toBe(403);
    expect(res.headers["x-gateway-status"]).toBe("404");
    expect(res.headers["x-gateway-body"]).toBe('{"error":{"code":404,"message":"Not found"}}');
    expect(res.body).toBe('{"error":{"code":404,"message":"Not found"}}');
    expect(res.headers["x-ratelimit-resource"]).toBe("anonymous");
  });

  it("keeps 401 (auth_request passes it with WWW-Authenticate)", async () => {
    const res = await ask(gw, "GET", "/v1/user", {}, "?nginx=1");
    expect(res.status).toBe(401);
    expect(res.headers["x-gateway-status"]).toBe("401");
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="api"');
    expect(res.headers["x-gateway-body"]).toBe('{"error":{"code":401,"message":"Authentication required"}}');
  });

  it("decision.nginx_status: true does it without the query: 400 -> 403", async () => {
    const res = await ask(nginxAlways, "GET", "/v1/user", { authorization: "Basic abc" });
    expect(res.status).toBe(403);
    expect(res.headers["x-gateway-status"]).toBe("400");
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="api", error="invalid_request"');
  });

  it("changes nothing for an allowed call: 200, no X-Gateway-Status", async () => {
    const res = await ask(nginxAlways, "GET", "/v1/user", { authorization: "Bearer valid-token" });
    expect(res.status).toBe(200);
    expect(res.headers["x-gateway-status"]).toBeUndefined();
    expect(res.headers["x-gateway-body"]).toBeUndefined();
  });

  it("without nginx mode, a 429 stays 429 (Traefik and Envoy relay the status)", async () => {
    const auth = { authorization: "Bearer reader-token" };
    let last = await ask(gw, "PUT", "/v1/x", auth);
    for (let i = 0; i < 3 && last.status === 200; i++) last = await ask(gw, "PUT", "/v1/x", auth);
    expect(last.status).toBe(429);
    const nginx = await ask(gw, "PUT", "/v1/x", auth, "?nginx=1");
    expect(nginx.status).toBe(403);
    expect(nginx.headers["x-gateway-status"]).toBe("429");
    expect(nginx.headers["retry-after"]).toBeDefined();
  });
});

describe("store unavailable with failure_mode: closed", () => {
  it("answers 503 with Retry-After; nginx mode 403 with X-Gateway-Status 503", async () => {
    const redis = await RedisServer.start();
    const closed = await startGateway(
      testConfig("http://127.0.0.1:1", {
        decision: { listen: { host: "127.0.0.1", port: 0 } },
        rate_limits: {
          store: { redis: { url: redis.url, key_prefix: "decision503" } },
          failure_mode: "closed",
          classes: { read: { windows: [{ limit: 10, window_s: 60 }] } },
          anonymous: { windows: [{ limit: 10, window_s: 60 }] },
        },
      }),
    );
    try {
      await redis.stop();
      const auth = { authorization: "Bearer valid-token" };
      const res = await ask(closed, "GET", "/v1/user", auth);
      expect(res.status).toBe(503);
      expect(res.headers["retry-after"]).toBe("5");
      expect(res.body).toBe('{"error":{"code":503,"message":"Rate limit service unavailable"}}');
      const nginx = await ask(closed, "GET", "/v1/user", auth, "?nginx=1");
      expect(nginx.status).toBe(403);
      expect(nginx.headers["x-gateway-status"]).toBe("503");
      expect(nginx.headers["retry-after"]).toBe("5");
    } finally {
      await closed.close();
    }
  });
});
