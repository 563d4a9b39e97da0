/**
 * `auth.jwt` beside `auth.introspection` against one real IdP (SPEC §11): an opaque token goes to
 * RFC 7662 introspection, a JWS-shaped one to local validation only, whether it validates or not
 * (the IdP's introspection counter does not move), and a flood of forged JWTs from one IP is
 * stopped by the anonymous budget (SPEC §3) like a flood of invented opaque tokens.
 */
import type { Server } from "node:http";
import { UnsecuredJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JwtAuthenticator } from "../../gateway/auth/jwt-authenticator.js";
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
import { scrape } from "../helpers/prom.js";

const ANONYMOUS_LIMIT = 5;

describe("jwt beside introspection", () => {
  let key: SigningKey;
  let stranger: SigningKey;
  let idp: JwtIdp;
  let upstream: { server: Server; url: string };
  let gw: TestGateway;

  /** Each test sends from its own client address (trust_proxy: 1), so each has its own budget. */
  const get = (token: string, ip: string) =>
    request(`${gw.url}/v1/items`, {
      headers: { authorization: `Bearer ${token}`, "x-forwarded-for": ip },
    });
  const forged = () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: idp.issuer, aud: AUDIENCE, sub: `s-${Math.random()}`, exp: now + 600 };
    return signJwt(stranger, claims);
  };

  beforeAll(async () => {
    [key, stranger] = await Promise.all([signingKey("idp-key"), signingKey("idp-key")]);
    idp = await startJwtIdp([key]);
    upstream = await listen((_req, res) => res.writeHead(200).end("ok"));
    gw = await startGateway(
      testConfig(upstream.url, {
        trust_proxy: 1,
        auth: jwtAuthConfig(idp, {}, true),
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

  it("introspects an opaque token and validates a JWT locally, with no network call", async () => {
    const opaque = await idp.issueOpaque("read");
    const jwt = await idp.issueJwt("read");
    const [introspections, jwks] = [idp.introspections(), idp.jwksRequests()];
    expect((await get(opaque, "10.0.0.1")).status).toBe(200);
    expect(idp.introspections()).toBe(introspections + 1);
    expect((await get(jwt, "10.0.0.1")).status).toBe(200);
    expect(idp.introspections()).toBe(introspections + 1);
    expect(idp.jwksRequests()).toBe(jwks);
  });

  it("never sends a JWS-shaped token to introspection, whether it validates or not", async () => {
    const introspections = idp.introspections();
    const now = Math.floor(Date.now() / 1000);
    const refused = [
      await forged(),
      new UnsecuredJWT({ iss: idp.issuer, aud: AUDIENCE, exp: now + 60 }).encode(),
      await signJwt(key, { iss: idp.issuer, aud: "https://elsewhere.example", exp: now + 60 }),
      await signJwt(key, { iss: idp.issuer, aud: AUDIENCE, exp: now - 3600 }),
    ];
    for (const token of refused) expect((await get(token, "10.0.0.2")).status).toBe(401);
    expect(idp.introspections()).toBe(introspections);
  });

  it("stops a flood of forged JWTs from one IP at the anonymous limit", async () => {
    const validations = async () => (await scrape(gw.adminUrl)).sum("gateway_jwt_validations_total");
    const before = await validations();
    const flood = await Promise.all(Array.from({ length: 30 }, () => forged()));
    const statuses = await Promise.all(flood.map((t) => get(t, "10.0.0.3").then((r) => r.status)));
    const refused = statuses.filter((s) => s === 401).length;
    expect(refused).toBeLessThanOrEqual(ANONYMOUS_LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(30 - refused);
    expect(await validations()).toBeLessThanOrEqual(before + ANONYMOUS_LIMIT);
    // Once the budget is spent, a forged token costs no validation at all.
    const spent = await validations();
    expect((await get(await forged(), "10.0.0.3")).status).toBe(429);
    expect(await validations()).toBe(spent);
    // A JWT already validated keeps working from that IP (SPEC §3: cached valid tokens).
    const valid = await idp.issueJwt("read");
    expect((await get(valid, "10.0.0.4")).status).toBe(200);
    expect((await get(valid, "10.0.0.3")).status).toBe(200);
  });
});
