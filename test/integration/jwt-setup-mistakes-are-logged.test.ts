/**
 * JWT and introspection set-up mistakes say what is wrong, against a real IdP
 * (oidc-provider issuing JWTs and opaque tokens): an `auth.jwt.issuer` with a trailing slash the
 * discovery document does not have is the same issuer (its tokens pass; it was a 503 for every
 * JWT), a discovery document naming another issuer is a line naming both; every refusal is a
 * `debug` line with its reason (`aud`, `iss`, `exp`, `signature`, `kid`, `inactive`) and what was
 * compared, and no line carries a byte of any token.
 */
import http, { type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JwtAuthenticator } from "../../gateway/auth/jwt-authenticator.js";
import { createLogger } from "../../gateway/observability/logger.js";
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
import { logLines, type LogLine } from "../helpers/log-lines.js";

const limits = {
  classes: { read: { windows: [{ limit: 1000, window_s: 3600 }] } },
  anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
};

describe("JWT set-up mistakes", () => {
  const logs = logLines();
  const otherLogs = logLines();
  const tokens: string[] = [];
  let key: SigningKey;
  let idp: JwtIdp;
  let upstream: { server: Server; url: string };
  let liar: Server;
  let gw: TestGateway;
  let other: TestGateway;
  const nowS = () => Math.floor(Date.now() / 1000);
  const claims = (extra: Record<string, unknown> = {}) => ({
    iss: idp.issuer,
    aud: AUDIENCE,
    sub: "user-1",
    scope: "read",
    iat: nowS(),
    exp: nowS() + 600,
    ...extra,
  });

  beforeAll(async () => {
    key = await signingKey("setup-key");
    idp = await startJwtIdp([key]);
    upstream = await listen((_req, res) => res.writeHead(200).end("ok"));
    // The trailing slash the discovery document (issuer without one) does not have.
    const auth = jwtAuthConfig(idp, { issuer: `${idp.issuer}/` }, true);
    gw = await startGateway(testConfig(upstream.url, { auth, rate_limits: limits }), {
      logger: createLogger("debug", logs.destination),
    });
    // A discovery document that names another issuer than the configuration.
    liar = http.createServer((_req, res) =>
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ issuer: "https://idp.example.test", jwks_uri: `${idp.issuer}/jwks` })),
    );
    await new Promise<void>((resolve) => liar.listen(0, "127.0.0.1", resolve));
    const liarIssuer = `http://127.0.0.1:${(liar.address() as AddressInfo).port}`;
    const otherAuth = { realm: "api", jwt: { issuer: liarIssuer, audience: [AUDIENCE] } };
    other = await startGateway(testConfig(upstream.url, { auth: otherAuth, rate_limits: limits }), {
      logger: createLogger("debug", otherLogs.destination),
    });
    await Promise.all(
      [gw, other].map((g) => (g.gateway.runtime.auth.authenticators[0] as JwtAuthenticator).keys.started),
    );
  });

  afterAll(async () => {
    await Promise.all([gw?.close(), other?.close()]);
    await Promise.all([closeServer(upstream.server), closeServer(liar), idp.stop()]);
  });

  const get = (token: string, g = gw) => {
    tokens.push(token);
    return request(`${g.url}/v1/x`, { headers: { authorization: `Bearer ${token}` } });
  };
  const refusal = (reason: string): Promise<LogLine> =>
    logs.waitFor((l) => l.level === "debug" && l.reason === reason);

  it("accepts the IdP's tokens when auth.jwt.issuer has a trailing slash its discovery document lacks", async () => {
    expect((await get(await idp.issueJwt("read"))).status).toBe(200);
    const line = await logs.waitFor((l) => l.level === "warn" && l.discovered === idp.issuer);
    expect(line.configured).toBe(`${idp.issuer}/`);
  });

  it("names both issuers when the discovery document names another one", async () => {
    const line = await otherLogs.waitFor((l) => l.level === "warn" && typeof l.err === "string");
    expect(line.err).toContain('names issuer "https://idp.example.test"');
    expect(line.err).toContain("auth.jwt.issuer");
    expect(line.err).toContain((other.gateway.runtime.config.auth.jwt as { issuer: string }).issuer);
  });

  it("logs a wrong audience at debug with what was expected and what the token said", async () => {
    expect((await get(await signJwt(key, claims({ aud: "https://elsewhere.test" })))).status).toBe(401);
    expect(await refusal("aud")).toMatchObject({
      auth: "jwt",
      result: "claims",
      expected: [AUDIENCE],
      received: "https://elsewhere.test",
      kid: "setup-key",
    });
  });

  it("logs a wrong issuer, an expired token, a foreign signature and an unknown kid with their reasons", async () => {
    const stranger = await signingKey("setup-key");
    const unknown = await signingKey("no-such-kid");
    const cases: [string, Promise<string>][] = [
      ["iss", signJwt(key, claims({ iss: "https://impostor.test" }))],
      ["exp", signJwt(key, claims({ exp: nowS() - 3600, iat: nowS() - 7200 }))],
      ["signature", signJwt(stranger, claims())],
      ["kid", signJwt(unknown, claims())],
    ];
    for (const [reason, token] of cases) {
      expect((await get(await token)).status, reason).toBe(401);
      expect(await refusal(reason)).toMatchObject({ auth: "jwt", reason });
    }
    expect(await refusal("iss")).toMatchObject({ expected: idp.issuer, received: "https://impostor.test" });
  });

  it("logs an introspection refusal at debug with its reason", async () => {
    expect((await get("opaque-token-the-idp-never-issued")).status).toBe(401);
    expect(await refusal("inactive")).toMatchObject({ auth: "introspection" });
  });

  it("writes no byte of any token it was sent", () => {
    const text = [...logs.lines, ...otherLogs.lines].map((l) => JSON.stringify(l)).join("\n");
    expect(tokens.length).toBeGreaterThan(6);
    for (const t of tokens) for (const part of t.split(".")) expect(text).not.toContain(part);
  });
});
