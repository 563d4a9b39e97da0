/**
 * The JWKS endpoint stopped (SPEC §11): a gateway that cannot fetch its keys at start still starts
 * and logs it; a token whose key is not held and cannot be fetched gets the 503
 * `auth_unavailable` with `Retry-After` (result `unavailable`), never a 401; keys already held keep
 * working while the endpoint is down; and the gateway recovers without a restart.
 */
import type { Server } from "node:http";
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

describe("the JWKS endpoint stopped", () => {
  const clock = new ManualClock(Date.now());
  const logs = logLines();
  let key: SigningKey;
  let unpublished: SigningKey;
  let idp: JwtIdp;
  let upstream: { server: Server; url: string };
  let gw: TestGateway;

  const get = (token: string) =>
    request(`${gw.url}/v1/items`, { headers: { authorization: `Bearer ${token}` } });
  const token = (k: SigningKey) => {
    const now = Math.floor(clock.nowMs() / 1000);
    return signJwt(k, {
      iss: idp.issuer,
      aud: AUDIENCE,
      sub: "u",
      client_id: "app",
      iat: now,
      exp: now + 600,
    });
  };
  const metric = async (name: string, result: string) => (await scrape(gw.adminUrl)).value(name, { result });

  beforeAll(async () => {
    [key, unpublished] = await Promise.all([signingKey("published"), signingKey("unpublished")]);
    idp = await startJwtIdp([key]);
    await idp.stop();
    upstream = await listen((_req, res) => res.writeHead(200).end("ok"));
    gw = await startGateway(
      testConfig(upstream.url, {
        auth: jwtAuthConfig(idp),
        rate_limits: {
          classes: { read: { windows: [{ limit: 1000, window_s: 3600 }] } },
          anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
        },
      }),
      { clock, logger: createLogger("info", logs.destination) },
    );
    await (gw.gateway.runtime.auth.authenticators[0] as JwtAuthenticator).keys.started;
  });

  afterAll(async () => {
    await gw.close();
    await Promise.all([closeServer(upstream.server), idp.stop()]);
  });

  it("starts without keys, logs the failed fetch once, and answers 503 with Retry-After, not 401", async () => {
    const failed = await logs.waitFor((l) => l.msg === "JWKS fetch failed; keys already held keep working");
    expect(failed).toMatchObject({ level: "warn", held: false });
    expect(await metric("gateway_jwks_fetches_total", "error")).toBe(1);
    for (let i = 0; i < 2; i++) {
      const res = await get(await token(key));
      expect(res.status).toBe(503);
      expect(res.headers["retry-after"]).toBe("5");
      expect(JSON.parse(res.body)).toEqual({
        error: { code: 503, message: "Authentication service unavailable" },
      });
    }
    // The first token's unknown key made one refetch (it failed); the second waited out the 30 s.
    expect(await metric("gateway_jwks_fetches_total", "error")).toBe(2);
    expect(await metric("gateway_jwt_validations_total", "unavailable")).toBe(2);
    expect(await metric("gateway_auth_results_total", "unavailable")).toBe(2);
    expect(
      logs.lines.filter((l) => l.msg === "JWKS fetch failed; keys already held keep working"),
    ).toHaveLength(1);
  });

  it("recovers once the endpoint answers, without a restart", async () => {
    await idp.start();
    clock.advance(30_000);
    expect((await get(await token(key))).status).toBe(200);
    await logs.waitFor((l) => l.msg === "JWKS endpoint answers again");
    expect(await metric("gateway_jwks_fetches_total", "success")).toBe(1);
  });

  it("keeps validating with the keys it holds while the endpoint is down; an unknown key gets 503", async () => {
    await idp.stop();
    clock.advance(30_000);
    const unknown = await get(await token(unpublished));
    expect(unknown.status).toBe(503);
    expect(unknown.headers["retry-after"]).toBe("5");
    expect(await metric("gateway_jwks_fetches_total", "error")).toBe(3);
    expect((await get(await token(key))).status).toBe(200);
    expect((await get(await token(unpublished))).status).toBe(503);
  });
});
