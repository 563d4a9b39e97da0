/**
 * Configuration keys the SPEC promises and no other test exercises end to end: a custom
 * `status_path` and `null` disabling it (§8), `auth.forward_authorization: false` (§5), a custom
 * `auth.realm` in the challenges (§2) and `routes[].strip_prefix`.
 */
import type { IncomingHttpHeaders, Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TOKENS_FILE, startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";

let upstream: { server: Server; url: string };
const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
const started: TestGateway[] = [];
const auth = { authorization: "Bearer valid-token" };

beforeAll(async () => {
  upstream = await listen((req, res) => {
    seen.push({ url: req.url ?? "", headers: req.headers });
    res.end("ok");
  });
});

afterAll(async () => {
  await Promise.all(started.map((g) => g.close()));
  await closeServer(upstream.server);
});

async function gateway(overrides: Record<string, unknown>): Promise<TestGateway> {
  const gw = await startGateway(testConfig(upstream.url, overrides));
  started.push(gw);
  return gw;
}

const limits = (extra: Record<string, unknown>) => ({
  classes: { read: { match: { methods: ["GET"] }, windows: [{ limit: 10, window_s: 60 }] } },
  ...extra,
});

describe("configuration options take effect", () => {
  it("serves the status endpoint on a custom status_path, and not on the default one", async () => {
    const gw = await gateway({ rate_limits: limits({ status_path: "/v1/limits" }) });
    const custom = await request(`${gw.url}/v1/limits`, { headers: auth });
    expect(custom.status).toBe(200);
    expect(JSON.parse(custom.body)).toMatchObject({ resources: { read: { limit: 10, remaining: 10 } } });
    expect(seen.some((s) => s.url === "/v1/limits")).toBe(false);
    expect((await request(`${gw.url}/rate_limit`, { headers: auth })).status).toBe(404);
  });

  it("status_path: null disables the endpoint: the path is routed like any other", async () => {
    const gw = await gateway({
      routes: [{ prefix: "/", upstream: "docs" }],
      rate_limits: limits({ status_path: null }),
    });
    const res = await request(`${gw.url}/rate_limit`, { headers: auth });
    expect(res.status).toBe(200);
    expect(res.body).toBe("ok");
    expect(seen[seen.length - 1]!.url).toBe("/rate_limit");
  });

  it("forward_authorization: false keeps the client's Authorization from the upstream", async () => {
    const gw = await gateway({
      auth: { realm: "api", forward_authorization: false, static: { tokens_file: TOKENS_FILE } },
    });
    expect((await request(`${gw.url}/v1/user`, { headers: auth })).status).toBe(200);
    const h = seen[seen.length - 1]!.headers;
    expect(h.authorization).toBeUndefined();
    expect(h["x-auth-subject"]).toBe("alice");
  });

  it("puts a custom realm in every Bearer challenge", async () => {
    const gw = await gateway({ auth: { realm: "docs-api", static: { tokens_file: TOKENS_FILE } } });
    const missing = await request(`${gw.url}/v1/user`);
    const invalid = await request(`${gw.url}/v1/user`, { headers: { authorization: "Bearer nope" } });
    expect(missing.headers["www-authenticate"]).toBe('Bearer realm="docs-api"');
    expect(invalid.headers["www-authenticate"]).toBe('Bearer realm="docs-api", error="invalid_token"');
  });

  it.each([
    ["/v1", "/v1/user?x=1", "/user?x=1"],
    ["/v1/", "/v1/user", "/user"],
    ["/v1", "/v1", "/"],
  ])("strip_prefix %s forwards %s as %s", async (prefix, path, forwarded) => {
    const gw = await gateway({ routes: [{ prefix, upstream: "docs", strip_prefix: true }] });
    expect((await request(`${gw.url}${path}`, { headers: auth })).status).toBe(200);
    expect(seen[seen.length - 1]!.url).toBe(forwarded);
  });
});
