/**
 * JWT access tokens (SPEC §11, RFC 9068) validated locally against a real IdP (oidc-provider issuing
 * JWTs through resource indicators) and tokens crafted with jose where the IdP will not produce them:
 * what passes (claims forwarded, scopes enforced, one validation per token), what is refused with
 * 401 `invalid_token` and under which `gateway_jwt_validations_total` result, and the cache
 * (`max_ttl_s`, `negative_ttl_s`) on a ManualClock started at the real time (the IdP's `iat`/`exp`
 * are real).
 */
import type { IncomingHttpHeaders, Server } from "node:http";
import { CompactSign, SignJWT, UnsecuredJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../gateway/base/clock.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import {
  AUDIENCE,
  jwtAuthConfig,
  signingKey,
  signJwt,
  startJwtIdp,
  type JwtIdp,
  type SigningKey,
} from "../helpers/jwt-idp.js";
import { logLines } from "../helpers/log-lines.js";
import { scrape } from "../helpers/prom.js";
import { createLogger } from "../../gateway/observability/logger.js";
import type { JwtAuthenticator } from "../../gateway/auth/jwt-authenticator.js";

const LEEWAY_S = 30;
const MAX_TTL_S = 120;
const NEGATIVE_TTL_S = 10;

describe("JWT access tokens validated locally (SPEC §11)", () => {
  const clock = new ManualClock(Date.now());
  const logs = logLines();
  let key: SigningKey;
  let stranger: SigningKey;
  let idp: JwtIdp;
  let upstream: { server: Server; url: string };
  let seen: IncomingHttpHeaders[];
  let gw: TestGateway;
  const nowS = () => Math.floor(clock.nowMs() / 1000);

  beforeAll(async () => {
    [key, stranger] = await Promise.all([signingKey("idp-key-1"), signingKey("idp-key-1")]);
    idp = await startJwtIdp([key]);
    seen = [];
    upstream = await listen((req, res) => {
      seen.push(req.headers);
      res.writeHead(200).end("ok");
    });
    const config = testConfig(upstream.url, {
      routes: [
        { prefix: "/v1", upstream: "docs" },
        { prefix: "/admin", upstream: "docs", scopes: ["admin"] },
      ],
      auth: jwtAuthConfig(idp, {
        algorithms: ["ES256", "RS256"],
        leeway_s: LEEWAY_S,
        cache: { max_ttl_s: MAX_TTL_S, negative_ttl_s: NEGATIVE_TTL_S },
      }),
      rate_limits: {
        classes: { read: { windows: [{ limit: 1000, window_s: 3600 }] } },
        anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
      },
    });
    gw = await startGateway(config, { clock, logger: createLogger("debug", logs.destination) });
    await (gw.gateway.runtime.auth.authenticators[0] as JwtAuthenticator).keys.started;
  });

  afterAll(async () => {
    await gw.close();
    await Promise.all([closeServer(upstream.server), idp.stop()]);
  });

  const get = (token: string, path = "/v1/items") =>
    request(`${gw.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const validations = async (result: string) =>
    (await scrape(gw.adminUrl)).value("gateway_jwt_validations_total", { result });
  /** Claims the IdP would sign, valid now. */
  const claims = (extra: Record<string, unknown> = {}) => ({
    iss: idp.issuer,
    aud: AUDIENCE,
    sub: "user-7",
    client_id: "app",
    scope: "read",
    iat: nowS(),
    exp: nowS() + 600,
    ...extra,
  });

  it("accepts the IdP's token, forwards sub, client_id and scope, and verifies it once", async () => {
    const token = await idp.issueJwt("read write");
    const before = await validations("valid");
    seen.length = 0;
    expect((await get(token)).status).toBe(200);
    expect((await get(token)).status).toBe(200);
    expect(seen[0]).toMatchObject({
      "x-auth-subject": "app",
      "x-auth-client-id": "app",
      "x-auth-scope": "read write",
    });
    expect(await validations("valid")).toBe(before + 1);
  });

  it("joins an scp array with single spaces in X-Auth-Scope and enforces route scopes", async () => {
    const token = await signJwt(key, claims({ scope: undefined, scp: ["read", "admin"] }));
    seen.length = 0;
    expect((await get(token, "/admin/x")).status).toBe(200);
    expect(seen[0]!["x-auth-scope"]).toBe("read admin");
    const reader = await idp.issueJwt("read");
    const res = await get(reader, "/admin/x");
    expect(res.status).toBe(403);
    expect(res.headers["www-authenticate"]).toBe(
      'Bearer realm="api", error="insufficient_scope", scope="admin"',
    );
  });

  it("accepts exp, nbf and iat within leeway_s", async () => {
    const token = await signJwt(
      key,
      claims({ exp: nowS() - LEEWAY_S + 5, nbf: nowS() + LEEWAY_S - 5, iat: nowS() + 10 }),
    );
    expect((await get(token)).status).toBe(200);
  });

  const refusals: [string, string, () => Promise<string>][] = [
    [
      "a tampered payload",
      "bad_signature",
      async () => {
        const [h, , s] = (await idp.issueJwt("read")).split(".");
        const forged = Buffer.from(JSON.stringify(claims({ scope: "read write admin" }))).toString(
          "base64url",
        );
        return `${h}.${forged}.${s}`;
      },
    ],
    ["a signature by another key under the IdP's kid", "bad_signature", () => signJwt(stranger, claims())],
    ["alg none (RFC 8725 §3.1)", "algorithm", async () => new UnsecuredJWT(claims()).encode()],
    [
      "an HMAC algorithm",
      "algorithm",
      () =>
        new SignJWT(claims())
          .setProtectedHeader({ alg: "HS256", kid: key.kid })
          .sign(new TextEncoder().encode("x".repeat(32))),
    ],
    [
      "an algorithm outside `algorithms`",
      "algorithm",
      async () => signJwt(await signingKey(key.kid, "PS256"), claims()),
    ],
    ["an expired token", "expired", () => signJwt(key, claims({ exp: nowS() - LEEWAY_S - 1 }))],
    ["a token without exp", "claims", () => signJwt(key, claims({ exp: undefined }))],
    ["a wrong issuer", "claims", () => signJwt(key, claims({ iss: "https://other.example" }))],
    ["no matching audience", "claims", () => signJwt(key, claims({ aud: ["https://other.example", "x"] }))],
    ["nbf beyond leeway_s", "claims", () => signJwt(key, claims({ nbf: nowS() + LEEWAY_S + 5 }))],
    ["iat beyond leeway_s", "claims", () => signJwt(key, claims({ iat: nowS() + LEEWAY_S + 5 }))],
    ["a sub that is not a string", "claims", () => signJwt(key, claims({ sub: 7 }))],
    [
      "a kid the key set does not hold",
      "unknown_key",
      () => signJwt({ ...stranger, kid: "never-published" }, claims()),
    ],
    [
      "a signed JWS whose payload is not a claims set",
      "malformed",
      () =>
        new CompactSign(new TextEncoder().encode("not json"))
          .setProtectedHeader({ alg: key.alg, kid: key.kid })
          .sign(key.privateKey),
    ],
    ["a token that is not a JWS at all", "malformed", async () => "opaque-token-for-a-jwt-only-gateway"],
  ];

  it.each(refusals)("refuses %s with 401 invalid_token (result %s)", async (_what, result, make) => {
    const token = await make();
    const before = await validations(result);
    const res = await get(token);
    expect(res.status).toBe(401);
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="api", error="invalid_token"');
    expect(JSON.parse(res.body)).toEqual({
      error: { code: 401, message: "Invalid or expired access token" },
    });
    expect(await validations(result)).toBe(before + 1);
  });

  it("caches a refusal for negative_ttl_s, then validates again", async () => {
    const token = await signJwt(key, claims({ aud: "https://other.example" }));
    const before = await validations("claims");
    expect((await get(token)).status).toBe(401);
    expect((await get(token)).status).toBe(401);
    expect(await validations("claims")).toBe(before + 1);
    clock.advance(NEGATIVE_TTL_S * 1000);
    expect((await get(token)).status).toBe(401);
    expect(await validations("claims")).toBe(before + 2);
  });

  it("keeps a valid token until min(exp, now + max_ttl_s), then verifies it again", async () => {
    const shortLived = await signJwt(key, claims({ exp: nowS() + 60 }));
    const token = await idp.issueJwt("read");
    const before = await validations("valid");
    expect((await get(token)).status).toBe(200);
    expect((await get(shortLived)).status).toBe(200);
    expect(await validations("valid")).toBe(before + 2);
    clock.advance(60_000); // shortLived reaches exp: re-validated, now within leeway_s
    expect((await get(token)).status).toBe(200);
    expect((await get(shortLived)).status).toBe(200);
    expect(await validations("valid")).toBe(before + 3);
    clock.advance((MAX_TTL_S - 60) * 1000);
    expect((await get(token)).status).toBe(200);
    expect(await validations("valid")).toBe(before + 4);
  });

  it("writes no token byte to any log line", async () => {
    const token = await idp.issueJwt("read");
    await get(token);
    await get(`${token.slice(0, -4)}AAAA`);
    gw.gateway.logger.flush();
    await logs.waitFor((l) => l.msg === "request" && l.status === 401);
    const text = logs.lines.map((l) => JSON.stringify(l)).join("\n");
    for (const part of token.split(".")) expect(text).not.toContain(part);
  });
});

describe("typ (RFC 8725 §3.11) is checked only when auth.jwt.typ lists the accepted values", () => {
  let key: SigningKey;
  let idp: JwtIdp;
  let upstream: { server: Server; url: string };
  let strict: TestGateway;
  let lax: TestGateway;

  beforeAll(async () => {
    key = await signingKey("typ-key");
    idp = await startJwtIdp([key]);
    upstream = await listen((_req, res) => res.writeHead(200).end("ok"));
    const config = (jwt: Record<string, unknown>) =>
      testConfig(upstream.url, {
        auth: jwtAuthConfig(idp, jwt),
        rate_limits: {
          classes: { read: { windows: [{ limit: 1000, window_s: 3600 }] } },
          anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
        },
      });
    [strict, lax] = await Promise.all([startGateway(config({ typ: ["at+jwt"] })), startGateway(config({}))]);
  });

  afterAll(async () => {
    await Promise.all([strict.close(), lax.close()]);
    await Promise.all([closeServer(upstream.server), idp.stop()]);
  });

  const status = async (g: TestGateway, typ: string | undefined) => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: idp.issuer, aud: AUDIENCE, sub: "u", exp: now + 600 };
    const token = await signJwt(key, claims, { typ });
    return (await request(`${g.url}/v1/x`, { headers: { authorization: `Bearer ${token}` } })).status;
  };

  it("accepts at+jwt in either spelling and refuses JWT or no typ when configured", async () => {
    expect(await status(strict, "at+jwt")).toBe(200);
    expect(await status(strict, "application/at+JWT")).toBe(200);
    expect(await status(strict, "JWT")).toBe(401);
    expect(await status(strict, undefined)).toBe(401);
    expect((await scrape(strict.adminUrl)).value("gateway_jwt_validations_total", { result: "claims" })).toBe(
      2,
    );
  });

  it("accepts any typ when not configured (several IdPs send JWT)", async () => {
    expect(await status(lax, "JWT")).toBe(200);
    expect(await status(lax, undefined)).toBe(200);
  });
});
