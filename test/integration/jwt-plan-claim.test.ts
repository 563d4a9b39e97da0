/**
 * The plan claim of SPEC §10 read from a JWT access token (SPEC §11): a token whose `plan` claim
 * names a configured plan gets that plan's limits, headers and `GET /rate_limit` `plan`; one naming
 * an unknown plan falls back to `default_plan` and is counted.
 */
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

let key: SigningKey;
let idp: JwtIdp;
let upstream: Awaited<ReturnType<typeof listen>>;
let gw: TestGateway;

beforeAll(async () => {
  key = await signingKey("plan-key");
  idp = await startJwtIdp([key]);
  upstream = await listen((_req, res) => res.end("ok"));
  gw = await startGateway(
    testConfig(upstream.url, {
      auth: jwtAuthConfig(idp),
      rate_limits: {
        classes: { read: { windows: [{ limit: 5, window_s: 3600 }] } },
        plan_claim: "plan",
        default_plan: "free",
        plans: { free: {}, pro: { read: [{ limit: 50, window_s: 3600 }] } },
      },
    }),
  );
  await (gw.gateway.runtime.auth.authenticators[0] as JwtAuthenticator).keys.started;
});

afterAll(async () => {
  await gw?.close();
  await Promise.all([closeServer(upstream.server), idp.stop()]);
});

const token = (sub: string, plan: unknown) =>
  signJwt(key, {
    iss: idp.issuer,
    aud: AUDIENCE,
    sub,
    plan,
    exp: Math.floor(Date.now() / 1000) + 600,
  } as Record<string, unknown>);

describe("the plan claim of a JWT", () => {
  it("picks the plan it names: its limits in the headers and GET /rate_limit", async () => {
    const authorization = `Bearer ${await token("jwt-pro-user", "pro")}`;
    const res = await request(`${gw.url}/v1/user`, { headers: { authorization } });
    expect(res.status).toBe(200);
    expect(res.headers["x-ratelimit-limit"]).toBe("50");
    const status = await request(`${gw.url}/rate_limit`, { headers: { authorization } });
    expect(JSON.parse(status.body)).toMatchObject({ plan: "pro", resources: { read: { limit: 50 } } });
  });

  it("falls back to default_plan for a plan it does not know, and counts it", async () => {
    const before = (await scrape(gw.adminUrl)).value("gateway_plan_claim_unknown_total");
    const authorization = `Bearer ${await token("jwt-odd-user", "platinum")}`;
    const res = await request(`${gw.url}/v1/user`, { headers: { authorization } });
    expect(res.headers["x-ratelimit-limit"]).toBe("5");
    const status = await request(`${gw.url}/rate_limit`, { headers: { authorization } });
    expect(JSON.parse(status.body).plan).toBe("free");
    expect((await scrape(gw.adminUrl)).value("gateway_plan_claim_unknown_total")).toBe(before + 2);
  });
});
