/**
 * The issuer's key set over time (SPEC §11): a rotation at a real IdP (oidc-provider's keys
 * changed, new key added, then old keys removed) followed without a restart and without a failed
 * request for tokens signed by the new key; the background refresh; and the unknown-`kid` refetch
 * bound (one per 30 s on the gateway's clock, concurrent ones coalesced) against a flood of
 * invented `kid`s.
 */
import type { Server } from "node:http";
import { decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JwtAuthenticator } from "../../gateway/auth/jwt-authenticator.js";
import { ManualClock } from "../../gateway/base/clock.js";
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
import { logLines } from "../helpers/log-lines.js";
import { scrape } from "../helpers/prom.js";

describe("signing keys of the IdP over time", () => {
  const clock = new ManualClock(Date.now());
  let a: SigningKey, b: SigningKey, c: SigningKey, d: SigningKey, stranger: SigningKey;
  let idp: JwtIdp;
  let upstream: { server: Server; url: string };
  let gw: TestGateway;
  let refreshing: TestGateway;
  const refreshLogs = logLines();

  const config = (jwt: Record<string, unknown> = {}) =>
    testConfig(upstream.url, {
      auth: jwtAuthConfig(idp, jwt),
      rate_limits: {
        classes: { read: { windows: [{ limit: 1000, window_s: 3600 }] } },
        anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
      },
    });
  const jwtOf = (g: TestGateway) => g.gateway.runtime.auth.authenticators[0] as JwtAuthenticator;
  const status = async (g: TestGateway, token: string) =>
    (await request(`${g.url}/v1/items`, { headers: { authorization: `Bearer ${token}` } })).status;
  const claims = () => {
    const now = Math.floor(clock.nowMs() / 1000);
    return { iss: idp.issuer, aud: AUDIENCE, sub: "u", client_id: "app", iat: now, exp: now + 600 };
  };

  beforeAll(async () => {
    [a, b, c, d, stranger] = await Promise.all([
      signingKey("key-a"),
      signingKey("key-b", "RS256"),
      signingKey("key-c", "EdDSA"),
      signingKey("key-d"),
      signingKey("stranger"),
    ]);
    idp = await startJwtIdp([a]);
    upstream = await listen((_req, res) => res.writeHead(200).end("ok"));
    gw = await startGateway(config(), { clock });
    refreshing = await startGateway(config({ jwks_refresh_s: 1 }), {
      clock,
      logger: createLogger("info", refreshLogs.destination),
    });
    await Promise.all([jwtOf(gw).keys.started, jwtOf(refreshing).keys.started]);
  });

  /**
   * Key-set fetches of one gateway (its own counter: the IdP's counts the other gateway's
   * background refreshes too, one a second, which a slow machine lets land inside a test).
   */
  const jwksFetches = async (g: TestGateway) => (await scrape(g.adminUrl)).sum("gateway_jwks_fetches_total");

  afterAll(async () => {
    await Promise.all([gw.close(), refreshing.close()]);
    await Promise.all([closeServer(upstream.server), idp.stop()]);
  });

  it("follows a new key on the first request that needs it, with one refetch, and keeps the old one while published", async () => {
    const first = await idp.issueJwt("read");
    expect(await status(gw, first)).toBe(200);
    idp.setKeys([b, a]);
    const rotated = await idp.issueJwt("read");
    expect(decodeProtectedHeader(rotated).kid).toBe("key-b");
    const before = await jwksFetches(gw);
    expect(await status(gw, rotated)).toBe(200);
    expect(await jwksFetches(gw)).toBe(before + 1);
    expect(await status(gw, await signJwt(a, claims()))).toBe(200);
    expect(await jwksFetches(gw)).toBe(before + 1);
  });

  it("once old keys are removed, refuses their new tokens (unknown_key) and accepts the new key's", async () => {
    idp.setKeys([c]);
    clock.advance(30_000); // the previous test's refetch is 30 s old
    const token = await idp.issueJwt("read");
    expect(decodeProtectedHeader(token)).toMatchObject({ kid: "key-c", alg: "EdDSA" });
    expect(await status(gw, token)).toBe(200);
    const m0 = await scrape(gw.adminUrl);
    expect(await status(gw, await signJwt(a, claims()))).toBe(401);
    const m1 = await scrape(gw.adminUrl);
    const unknown = { result: "unknown_key" };
    expect(m1.value("gateway_jwt_validations_total", unknown)).toBe(
      m0.value("gateway_jwt_validations_total", unknown) + 1,
    );
  });

  it("one refetch for a flood of invented kids, none more within 30 s, one again after", async () => {
    clock.advance(30_000);
    const forged = (i: number) => signJwt({ ...stranger, kid: `invented-${i}-${Math.random()}` }, claims());
    const before = await jwksFetches(gw);
    const flood = await Promise.all(Array.from({ length: 20 }, (_, i) => forged(i)));
    const statuses = await Promise.all(flood.map((t) => status(gw, t)));
    expect(statuses).toEqual(flood.map(() => 401));
    expect(await jwksFetches(gw)).toBe(before + 1);
    clock.advance(29_000);
    expect(await status(gw, await forged(100))).toBe(401);
    expect(await jwksFetches(gw)).toBe(before + 1);
    clock.advance(1_000);
    expect(await status(gw, await forged(101))).toBe(401);
    expect(await jwksFetches(gw)).toBe(before + 2);
  });

  it("a background refresh brings a new key in before any token needs it", async () => {
    // An unknown kid now puts the refetch in its 30 s cooldown: only the background refresh can
    // bring key-d.
    expect(await status(refreshing, await signJwt({ ...stranger, kid: "nope" }, claims()))).toBe(401);
    idp.setKeys([d, c]);
    await refreshLogs.waitFor(
      (l) => l.msg === "JWKS keys loaded" && (l.kids as string[]).includes("key-d"),
      5_000,
    );
    expect(await status(refreshing, await idp.issueJwt("read"))).toBe(200);
  });
});
