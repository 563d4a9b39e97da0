/**
 * SPEC §3's brute-force guard counts, per client IP, only the tokens that failed to resolve
 * (unknown, inactive or expired at introspection, refused by JWT validation), against
 * `auth.guard.windows` (else the anonymous class's windows). Calls without a token, malformed
 * headers and unmatched paths count in the anonymous class (their own headers and 429) but never
 * spend the guard, so an address many clients share (a NAT, an office proxy) keeps getting new
 * valid tokens through; a flood of invented tokens is still stopped before the introspection
 * server. A real IdP (oidc-provider) issues the opaque tokens and the JWTs.
 */
import type { Server } from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { JwtAuthenticator } from "../../gateway/auth/jwt-authenticator.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request, type TestResponse } from "../helpers/http.js";
import { jwtAuthConfig, signingKey, startJwtIdp, type JwtIdp } from "../helpers/jwt-idp.js";

const ANONYMOUS_LIMIT = 60;
const GUARD_LIMIT = 5;

let idp: JwtIdp;
let upstream: { server: Server; url: string };
let gw: TestGateway;

/** A call from client address `ip` (trust_proxy: 1), with `authorization` when given. */
function call(ip: string, authorization?: string, path = "/v1/items"): Promise<TestResponse> {
  const headers: Record<string, string> = { "x-forwarded-for": ip };
  if (authorization !== undefined) headers.authorization = authorization;
  return request(`${gw.url}${path}`, { headers });
}

function countStatuses(rs: TestResponse[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const r of rs) out[r.status] = (out[r.status] ?? 0) + 1;
  return out;
}

beforeAll(async () => {
  idp = await startJwtIdp([await signingKey("idp-key")]);
  upstream = await listen((_req, res) => res.writeHead(200).end("ok"));
  gw = await startGateway(
    testConfig(upstream.url, {
      trust_proxy: 1,
      auth: { ...jwtAuthConfig(idp, {}, true), guard: { windows: [{ limit: GUARD_LIMIT, window_s: 3600 }] } },
      rate_limits: {
        classes: { read: { windows: [{ limit: 1000, window_s: 3600 }] } },
        anonymous: { windows: [{ limit: ANONYMOUS_LIMIT, window_s: 3600 }] },
      },
    }),
  );
  await (gw.gateway.runtime.auth.authenticators[0] as JwtAuthenticator).keys.started;
});

afterAll(async () => {
  await gw.close();
  await Promise.all([closeServer(upstream.server), idp.stop()]);
});

it("100 calls without a token, malformed headers and unmatched paths leave new valid tokens from that address working", async () => {
  const ip = "10.1.0.1";
  const anonymous: TestResponse[] = [];
  for (let i = 0; i < 100; i++) anonymous.push(await call(ip));
  expect(countStatuses(anonymous)).toEqual({ 401: ANONYMOUS_LIMIT, 429: 100 - ANONYMOUS_LIMIT });
  // Each still counted in the anonymous class: its headers and its 429.
  const malformed = await call(ip, "Basic dXNlcjpwYXNz");
  const unmatched = await call(ip, undefined, "/nowhere");
  for (const r of [anonymous.at(-1)!, malformed, unmatched]) {
    expect(r.status).toBe(429);
    expect(r.headers["x-ratelimit-resource"]).toBe("anonymous");
    expect(r.headers["x-ratelimit-limit"]).toBe(String(ANONYMOUS_LIMIT));
  }

  const introspections = idp.introspections();
  const opaque = await call(ip, `Bearer ${await idp.issueOpaque("read")}`);
  expect(opaque.status).toBe(200);
  expect(opaque.headers["x-ratelimit-resource"]).toBe("read");
  expect(idp.introspections()).toBe(introspections + 1);
  expect((await call(ip, `Bearer ${await idp.issueJwt("read")}`)).status).toBe(200);
});

it("a flood of invented tokens is stopped at auth.guard.windows before the introspection server", async () => {
  const ip = "10.1.0.2";
  const introspections = idp.introspections();
  const flood = await Promise.all(
    Array.from({ length: 50 }, (_, i) => call(ip, `Bearer invented-${i}-${Math.random()}`)),
  );
  expect(countStatuses(flood)).toEqual({ 401: GUARD_LIMIT, 429: 50 - GUARD_LIMIT });
  expect(idp.introspections() - introspections).toBe(GUARD_LIMIT);
  // The guard's 429 is the anonymous one, with the guard's window in its headers.
  const limited = flood.find((r) => r.status === 429)!;
  expect(limited.headers["x-ratelimit-resource"]).toBe("anonymous");
  expect(limited.headers["x-ratelimit-limit"]).toBe(String(GUARD_LIMIT));
  expect(limited.headers["x-ratelimit-remaining"]).toBe("0");
  expect(Number(limited.headers["retry-after"])).toBeGreaterThanOrEqual(1);

  // Spent: a new valid token from that address is not resolved; one already cached still works.
  const cached = await idp.issueOpaque("read");
  expect((await call("10.1.0.3", `Bearer ${cached}`)).status).toBe(200);
  const fresh = await idp.issueOpaque("read");
  const before = idp.introspections();
  expect((await call(ip, `Bearer ${fresh}`)).status).toBe(429);
  expect(idp.introspections()).toBe(before);
  expect((await call(ip, `Bearer ${cached}`)).status).toBe(200);
  // Calls without a token from that address are the anonymous class's business, still 401.
  expect((await call(ip)).status).toBe(401);
});
