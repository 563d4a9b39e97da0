/**
 * CORS over HTTP (SPEC §14): preflights answered by the gateway (never forwarded, authenticated or
 * counted; the IP's anonymous window read for the headers), the CORS fields on every response to an
 * allowed origin — the gateway's own 401/404/429 included — and none for another origin; the
 * upstream's `Access-Control-*` fields replaced, its `Vary` extended. `cors-browser.test.ts` does
 * the same from a real browser.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";

const ALLOWED = "https://app.example.com";
const EXPOSED =
  "X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-RateLimit-Resource, Retry-After, X-Request-Id";
let upstream: Awaited<ReturnType<typeof listen>>;
let upstreamRequests = 0;
let gw: TestGateway;
let plain: TestGateway;

beforeAll(async () => {
  upstream = await listen((_req, res) => {
    upstreamRequests++;
    res.writeHead(200, {
      "content-type": "text/plain",
      vary: "Accept-Encoding",
      "access-control-allow-origin": "https://upstream-says.example",
      "access-control-expose-headers": "X-Upstream",
    });
    res.end("ok");
  });
  const config = {
    rate_limits: {
      classes: {
        limited: { match: { paths: ["/v1/limited"] }, windows: [{ limit: 1, window_s: 3600 }] },
        read: { windows: [{ limit: 100, window_s: 3600 }] },
      },
      anonymous: { windows: [{ limit: 10, window_s: 3600 }] },
    },
  };
  gw = await startGateway(
    testConfig(upstream.url, {
      ...config,
      cors: { allowed_origins: [ALLOWED, "https://*.example.org"], max_age_s: 120 },
    }),
  );
  plain = await startGateway(testConfig(upstream.url, config));
});

afterAll(async () => {
  await Promise.all([gw?.close(), plain?.close()]);
  await closeServer(upstream.server);
});

const preflight = (origin: string, url = `${gw.url}/v1/user`) =>
  request(url, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": "GET",
      "access-control-request-headers": "authorization",
    },
  });

describe("preflights", () => {
  it("answers an allowed origin's preflight itself: 204, the allow fields, not forwarded, not counted", async () => {
    const before = upstreamRequests;
    const m0 = await scrape(gw.adminUrl);
    const a = await preflight(ALLOWED);
    const b = await preflight("https://deep.sub.example.org");
    expect(a.status).toBe(204);
    expect(a.headers).toMatchObject({
      "access-control-allow-origin": ALLOWED,
      "access-control-allow-methods": "GET, HEAD, POST, PUT, PATCH, DELETE",
      "access-control-allow-headers": "authorization, content-type, x-request-id",
      "access-control-max-age": "120",
      vary: "Origin",
      "x-ratelimit-resource": "anonymous",
      "x-ratelimit-limit": "10",
    });
    expect(a.headers["x-request-id"]).toBeDefined();
    expect(b.headers["access-control-allow-origin"]).toBe("https://deep.sub.example.org");
    // Read, not counted: both show the same remaining, and no decision was counted.
    expect(b.headers["x-ratelimit-remaining"]).toBe(a.headers["x-ratelimit-remaining"]);
    expect(upstreamRequests).toBe(before);
    const m1 = await scrape(gw.adminUrl);
    expect(m1.sum("gateway_ratelimit_decisions_total")).toBe(m0.sum("gateway_ratelimit_decisions_total"));
  });

  it("gives another origin's preflight no Access-Control-Allow-* field", async () => {
    for (const origin of ["https://evil.test", "https://example.org.evil.net", "http://app.example.com"]) {
      const res = await preflight(origin);
      expect(res.status).toBe(204);
      expect(Object.keys(res.headers).filter((h) => h.startsWith("access-control-"))).toEqual([]);
      expect(res.headers.vary).toBe("Origin");
      expect(res.headers["x-request-id"]).toBeDefined();
    }
  });

  it("treats OPTIONS as an ordinary request without a cors block", async () => {
    const res = await preflight(ALLOWED, `${plain.url}/v1/user`);
    expect(res.status).toBe(401);
    expect(res.headers["access-control-allow-origin"]).toBeUndefined();
  });
});

describe("responses to an allowed origin", () => {
  const auth = { authorization: "Bearer valid-token", origin: ALLOWED };

  it("replaces the upstream's CORS fields with the gateway's and extends its Vary", async () => {
    const res = await request(`${gw.url}/v1/user`, { headers: auth });
    expect(res.status).toBe(200);
    expect(res.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(res.headers["access-control-expose-headers"]).toBe(EXPOSED);
    expect(res.headers.vary).toBe("Accept-Encoding, Origin");
  });

  it.each([
    ["401", `/v1/user`, { origin: ALLOWED }],
    ["404", `/nowhere`, { origin: ALLOWED }],
  ])("carries them on the gateway's own %s", async (status, path, headers) => {
    const res = await request(`${gw.url}${path}`, { headers });
    expect(String(res.status)).toBe(status);
    expect(res.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(res.headers["access-control-expose-headers"]).toBe(EXPOSED);
    expect(res.headers.vary).toBe("Origin");
  });

  it("carries them on a 429, so a page can read its body and Retry-After", async () => {
    await request(`${gw.url}/v1/limited`, { headers: auth });
    const res = await request(`${gw.url}/v1/limited`, { headers: auth });
    expect(res.status).toBe(429);
    expect(res.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(res.headers["retry-after"]).toMatch(/^\d+$/);
  });

  it("drops the upstream's CORS fields for another origin and adds none", async () => {
    const res = await request(`${gw.url}/v1/user`, {
      headers: { authorization: "Bearer valid-token", origin: "https://evil.test" },
    });
    expect(res.status).toBe(200);
    expect(Object.keys(res.headers).filter((h) => h.startsWith("access-control-"))).toEqual([]);
    expect(res.headers.vary).toBe("Accept-Encoding, Origin");
  });
});

describe("with allow_credentials and headers.ietf", () => {
  let credentialed: TestGateway;

  beforeAll(async () => {
    credentialed = await startGateway(
      testConfig(upstream.url, {
        headers: { ietf: true },
        cors: { allowed_origins: ["*"], allow_credentials: true },
      }),
    );
  });

  afterAll(() => credentialed.close());

  it("echoes the origin for *, allows credentials and exposes the IETF fields too", async () => {
    const res = await request(`${credentialed.url}/v1/user`, {
      headers: { authorization: "Bearer valid-token", origin: "https://any.example.net" },
    });
    expect(res.status).toBe(200);
    expect(res.headers["access-control-allow-origin"]).toBe("https://any.example.net");
    expect(res.headers["access-control-allow-credentials"]).toBe("true");
    expect(res.headers["access-control-expose-headers"]).toBe(`${EXPOSED}, RateLimit, RateLimit-Policy`);
  });
});
