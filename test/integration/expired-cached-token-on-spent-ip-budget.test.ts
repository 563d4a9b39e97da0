/**
 * SPEC §3's brute-force guard meets a token that expires while cached. Once an IP has spent its
 * guard budget (tokens that failed to resolve), a token that is not cached *and valid* is not sent
 * to the introspection server: the call gets the anonymous 429 until the guard's window frees. A token that was cached but is
 * now past its `exp` is not valid, so it gets that 429 too, without an introspection call; a cached
 * token still within its `exp` keeps working. Real oidc-provider, gateway on a ManualClock started
 * at the real time (so the provider's `exp` values line up with it).
 */
import type { Server } from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ManualClock } from "../../gateway/base/clock.js";
import { captureLog } from "../helpers/access-lines.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { introspectionAuthConfig, startAuthServer, type AuthServer } from "../helpers/oidc.js";

const TOKEN_TTL_S = 60;
const ANONYMOUS_LIMIT = 3;

let upstream: { server: Server; url: string };
let auth: AuthServer;
let gw: TestGateway;
const clock = new ManualClock(Date.now());
const log = captureLog();

beforeAll(async () => {
  upstream = await listen((_req, res) => res.end("ok"));
  auth = await startAuthServer({ tokenTtlS: TOKEN_TTL_S });
  gw = await startGateway(
    testConfig(upstream.url, {
      auth: introspectionAuthConfig(auth),
      rate_limits: {
        classes: { read: { windows: [{ limit: 100, window_s: 3600 }] } },
        anonymous: { windows: [{ limit: ANONYMOUS_LIMIT, window_s: 3600 }] },
      },
    }),
    { clock, logger: log.logger },
  );
});

afterAll(async () => {
  await gw.close();
  await auth.stop();
  await closeServer(upstream.server);
});

async function limitedAuthResults(): Promise<number> {
  const text = (await request(`${gw.adminUrl}/metrics`)).body;
  return Number(/^gateway_auth_results_total\{result="limited"\} (\d+)$/m.exec(text)?.[1] ?? 0);
}

it("answers the anonymous 429 without introspecting once the cached token is past its exp, 401 once the window frees", async () => {
  const token = await auth.issueToken("read");
  const bearer = { authorization: `Bearer ${token}` };
  expect((await request(`${gw.url}/v1/user`, { headers: bearer })).status).toBe(200);
  expect(auth.introspections()).toBe(1);

  // The IP spends its guard budget on tokens that fail to resolve (calls without a token would not).
  for (let i = 0; i < ANONYMOUS_LIMIT; i++) {
    const invented = { authorization: `Bearer invented-${i}` };
    expect((await request(`${gw.url}/v1/user`, { headers: invented })).status).toBe(401);
  }
  expect(auth.introspections()).toBe(1 + ANONYMOUS_LIMIT);
  // Cached and within its exp: still served, still not introspected again.
  expect((await request(`${gw.url}/v1/user`, { headers: bearer })).status).toBe(200);

  clock.advance((TOKEN_TTL_S + 1) * 1000);
  const res = await request(`${gw.url}/v1/user`, { headers: bearer });
  expect(res.status).toBe(429);
  expect(JSON.parse(res.body)).toEqual({
    error: {
      code: 429,
      message: `API rate limit exceeded. Please try again in ${res.headers["retry-after"]} seconds`,
    },
  });
  expect(res.headers["x-ratelimit-resource"]).toBe("anonymous");
  expect(res.headers["x-ratelimit-limit"]).toBe(String(ANONYMOUS_LIMIT));
  expect(res.headers["x-ratelimit-remaining"]).toBe("0");
  expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1);
  expect(res.headers["www-authenticate"]).toBeUndefined();
  expect(auth.introspections()).toBe(1 + ANONYMOUS_LIMIT);
  expect(await limitedAuthResults()).toBe(1);
  expect(log.accessLines(gw).at(-1)).toMatchObject({
    status: 429,
    class: "anonymous",
    identity: null,
    error: "rate_limited",
  });

  // Once the window frees (sliding_window: the spent count weighs on the next fixed window too, so
  // two window lengths on), the expired token is introspected again and refused for what it is.
  clock.advance(2 * 3600 * 1000);
  const later = await request(`${gw.url}/v1/user`, { headers: bearer });
  expect(later.status).toBe(401);
  expect(later.headers["www-authenticate"]).toBe('Bearer realm="api", error="invalid_token"');
  expect(auth.introspections()).toBe(2 + ANONYMOUS_LIMIT);
});
