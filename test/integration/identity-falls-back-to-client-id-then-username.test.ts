/**
 * Whose budget an authenticated call spends: the token's `sub`, else its `client_id`, else its
 * `username` (else a hash of the token). Static tokens without `sub` share a budget exactly when
 * the field that names them is equal; the counts (`X-RateLimit-Remaining`) show it, and the access
 * line's `identity` names it.
 */
import { createHash } from "node:crypto";
import type { IncomingHttpHeaders, Server } from "node:http";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { captureLog } from "../helpers/access-lines.js";
import { FIXTURES, startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";

/**
 * The access line's `identity` for a budget named by `field` = `value`. The one place that knows
 * how the gateway spells an identity (today: the bare value; a hash prefix for a nameless token).
 */
function identity(field: "sub" | "client_id" | "username" | "token", value: string): string {
  return field === "token" ? `token:${createHash("sha256").update(value).digest("hex").slice(0, 32)}` : value;
}

let upstream: { server: Server; url: string };
let gw: TestGateway;
const log = captureLog();
const seen: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  upstream = await listen((req, res) => {
    seen.push(req.headers);
    res.end("ok");
  });
  gw = await startGateway(
    testConfig(upstream.url, {
      auth: { static: { tokens_file: path.join(FIXTURES, "identity-tokens.yaml") } },
      rate_limits: { classes: { read: { windows: [{ limit: 5, window_s: 3600 }] } } },
    }),
    { logger: log.logger },
  );
});

afterAll(async () => {
  await gw.close();
  await closeServer(upstream.server);
});

it("spends the budget of sub, else client_id, else username, else the token's hash", async () => {
  const calls: [token: string, remaining: string, who: string][] = [
    ["client-token-a", "4", identity("client_id", "app")],
    // client_id comes before username: the same budget as client-token-a
    ["client-token-b", "3", identity("client_id", "app")],
    // sub comes first: its client_id (app) and username (carol) budgets are not touched
    ["subject-token", "4", identity("sub", "dave")],
    ["user-token-a", "4", identity("username", "carol")],
    ["user-token-b", "3", identity("username", "carol")],
    ["nameless-token", "4", identity("token", "nameless-token")],
    ["client-token-a", "2", identity("client_id", "app")],
  ];
  for (const [token, remaining] of calls) {
    const res = await request(`${gw.url}/v1/user`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status, token).toBe(200);
    expect(res.headers["x-ratelimit-resource"], token).toBe("read");
    expect(res.headers["x-ratelimit-remaining"], token).toBe(remaining);
  }
  expect(log.accessLines(gw).map((l) => [l.identity, l.status])).toEqual(
    calls.map(([, , who]) => [who, 200]),
  );
  // The upstream gets only the fields the token has: no X-Auth-Subject without a sub.
  expect(seen.map((h) => [h["x-auth-subject"], h["x-auth-client-id"]])).toEqual([
    [undefined, "app"],
    [undefined, "app"],
    ["dave", "app"],
    [undefined, undefined],
    [undefined, undefined],
    [undefined, undefined],
    [undefined, "app"],
  ]);
});
