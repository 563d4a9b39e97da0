/**
 * Every row of SPEC §2: status, JSON body, content type, X-Request-Id, the rate-limit headers and
 * the extra headers of each gateway-produced response.
 */
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeServer, listen, REFUSED_PORT, request, type TestResponse } from "../helpers/http.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";

let upstream: { server: Server; url: string };
let slow: { server: Server; url: string };
let gw: TestGateway;
let deadUrl: string;

function expectGatewayError(res: TestResponse, status: number, message: string, resource: string): void {
  expect(res.status).toBe(status);
  expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
  expect(JSON.parse(res.body)).toEqual({ error: { code: status, message } });
  expect(res.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
  expect(res.headers["x-ratelimit-limit"]).toMatch(/^\d+$/);
  expect(res.headers["x-ratelimit-remaining"]).toMatch(/^\d+$/);
  expect(Number(res.headers["x-ratelimit-reset"])).toBeGreaterThan(Date.now() / 1000 - 1);
  expect(res.headers["x-ratelimit-resource"]).toBe(resource);
}

beforeAll(async () => {
  upstream = await listen((req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("ok");
  });
  slow = await listen(() => {
    /* never answers */
  });
  // A port of this worker's own test range, where nothing listens: a released ephemeral port could
  // be taken by another process's server or outgoing connection before the test uses it.
  deadUrl = `http://127.0.0.1:${REFUSED_PORT}`;
  gw = await startGateway(gatewayConfig());
});

/** The upstreams `docs`, `slow` (never answers, 300 ms timeout) and `dead` (refuses). */
function gatewayConfig(): Record<string, unknown> {
  return testConfig(upstream.url, {
    upstreams: {
      docs: { url: upstream.url },
      slow: { url: slow.url, timeout_ms: 300 },
      dead: { url: deadUrl, connect_timeout_ms: 500 },
    },
    routes: [
      { prefix: "/v1", upstream: "docs" },
      { prefix: "/v1/admin", upstream: "docs", scopes: ["admin"] },
      { prefix: "/slow", upstream: "slow" },
      { prefix: "/dead", upstream: "dead" },
    ],
  });
}

afterAll(async () => {
  await gw.close();
  await closeServer(upstream.server);
  await closeServer(slow.server);
});

const auth = { authorization: "Bearer valid-token" };

describe("responses the gateway itself produces (SPEC §2)", () => {
  it("401 without an Authorization header, with a Bearer challenge", async () => {
    const res = await request(`${gw.url}/v1/user`);
    expectGatewayError(res, 401, "Authentication required", "anonymous");
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="api"');
  });

  it.each(["Basic dXNlcjpwYXNz", "Bearer", "Bearer two words", "Bearer tok@n", `Bearer ${"a".repeat(5000)}`])(
    "400 for the malformed header %#",
    async (value) => {
      const res = await request(`${gw.url}/v1/user`, { headers: { authorization: value } });
      expectGatewayError(res, 400, "Malformed Authorization header", "anonymous");
      expect(res.headers["www-authenticate"]).toBe('Bearer realm="api", error="invalid_request"');
    },
  );

  it.each(["unknown-token", "inactive-token"])("401 invalid_token for %s", async (token) => {
    const res = await request(`${gw.url}/v1/user`, { headers: { authorization: `Bearer ${token}` } });
    expectGatewayError(res, 401, "Invalid or expired access token", "anonymous");
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="api", error="invalid_token"');
    expect(res.body).not.toContain(token);
  });

  it("403 insufficient_scope naming the scope", async () => {
    const res = await request(`${gw.url}/v1/admin/users`, { headers: auth });
    expectGatewayError(res, 403, "Insufficient scope", "read");
    expect(res.headers["www-authenticate"]).toBe(
      'Bearer realm="api", error="insufficient_scope", scope="admin"',
    );
  });

  it("404 when no route matches, counted as anonymous", async () => {
    const res = await request(`${gw.url}/v2/user`, { headers: auth });
    expectGatewayError(res, 404, "Not found", "anonymous");
  });

  it("400 for a malformed percent-encoding", async () => {
    const res = await request(`${gw.url}/v1/%zz`, { headers: auth });
    expectGatewayError(res, 400, "Bad request", "anonymous");
  });

  it("503 with Retry-After when the introspection source is unreachable and nothing is cached", async () => {
    const other = await startGateway(
      testConfig(upstream.url, {
        auth: {
          introspection: {
            url: `${deadUrl}/introspect`,
            client_id: "gw",
            client_secret: "s3cret",
            timeout_ms: 500,
          },
        },
      }),
    );
    try {
      const res = await request(`${other.url}/v1/user`, { headers: { authorization: "Bearer some-token" } });
      expectGatewayError(res, 503, "Authentication service unavailable", "anonymous");
      expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1);
      expect(res.body).not.toContain("s3cret");
    } finally {
      await other.close();
    }
  });

  it("429 with the exact body, Retry-After = Reset - now rounded up, Remaining 0", async () => {
    const statuses: number[] = [];
    let last: TestResponse | undefined;
    for (let i = 0; i < 5; i++) {
      last = await request(`${gw.url}/v1/pages`, {
        method: "POST",
        headers: { authorization: "Bearer reader-token" },
      });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    const res = last!;
    const n = Number(res.headers["retry-after"]);
    expect(res.body).toBe(
      `{"error":{"code":429,"message":"API rate limit exceeded. Please try again in ${n} seconds"}}`,
    );
    expect(n).toBeGreaterThanOrEqual(1);
    const reset = Number(res.headers["x-ratelimit-reset"]);
    expect(Math.abs(reset - Date.now() / 1000 - n)).toBeLessThanOrEqual(1);
    expect(res.headers["x-ratelimit-remaining"]).toBe("0");
    expect(res.headers["x-ratelimit-limit"]).toBe("3");
    expectGatewayError(res, 429, `API rate limit exceeded. Please try again in ${n} seconds`, "write");
  });

  it("keeps a well-formed X-Request-Id and sends it back", async () => {
    const res = await request(`${gw.url}/v1/user`, { headers: { "x-request-id": "abc-123" } });
    expect(res.headers["x-request-id"]).toBe("abc-123");
  });
});

describe("upstream failures (SPEC §2)", () => {
  let egw: TestGateway;

  beforeAll(async () => {
    egw = gw;
  });

  afterAll(async () => {
    if (egw !== gw) await egw.close();
  });

  it("502 when the upstream refuses the connection, without its address", async () => {
    const res = await request(`${egw.url}/dead/x`, { headers: auth });
    expectGatewayError(res, 502, "Bad gateway", "read");
    expect(res.body).not.toContain(new URL(deadUrl).port);
  });

  it("504 when the upstream does not answer within timeout_ms", async () => {
    const started = Date.now();
    const res = await request(`${egw.url}/slow/x`, { headers: auth });
    expectGatewayError(res, 504, "Gateway timeout", "read");
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });
});
