/**
 * `auth.schemes`: GitHub-style clients (Octokit) send `Authorization: token X`. Listed,
 * the scheme is accepted case-insensitively and the token checked as a Bearer one; by default it is
 * a 400 `invalid_request`, as before.
 */
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, TOKENS_FILE, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";

let upstream: { server: Server; url: string };
let both: TestGateway;
let bearerOnly: TestGateway;

beforeAll(async () => {
  upstream = await listen((req, res) => res.writeHead(200).end(String(req.headers["x-auth-subject"])));
  const auth = (schemes?: string[]) => ({ realm: "api", static: { tokens_file: TOKENS_FILE }, schemes });
  [both, bearerOnly] = await Promise.all([
    startGateway(testConfig(upstream.url, { auth: auth(["Bearer", "token"]) })),
    startGateway(testConfig(upstream.url, { auth: auth(undefined) })),
  ]);
});

afterAll(async () => {
  await Promise.all([both.close(), bearerOnly.close()]);
  await closeServer(upstream.server);
});

const get = (gw: TestGateway, authorization: string) =>
  request(`${gw.url}/v1/user`, { headers: { authorization } });

describe("auth.schemes", () => {
  it("with token listed, accepts `token X` (Octokit's header) and `Bearer X`, in any case", async () => {
    for (const header of [
      "token valid-token",
      "TOKEN valid-token",
      "Bearer valid-token",
      "bearer valid-token",
    ]) {
      const res = await get(both, header);
      expect(res.status, header).toBe(200);
      expect(res.body).toBe("alice");
    }
  });

  it("with token listed, still refuses an unknown token and keeps the Bearer challenge", async () => {
    const res = await get(both, "token not-a-token");
    expect(res.status).toBe(401);
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="api", error="invalid_token"');
  });

  it("by default answers `token X` 400 invalid_request", async () => {
    const res = await get(bearerOnly, "token valid-token");
    expect(res.status).toBe(400);
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="api", error="invalid_request"');
    expect((await get(bearerOnly, "Bearer valid-token")).status).toBe(200);
  });
});
