/**
 * Identities are keyed with their kind (SPEC §10): a token whose `sub` is "svc" and
 * one that only has `client_id: svc` spend two budgets, in the memory store and in Redis; and the
 * keys the Redis store writes carry the kind (`{sub:svc}`, `{client:svc}`). A class switched from
 * `identity: subject` to `client` by a reload spends the client's budget, never the subject's.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { cli, RedisServer } from "../helpers/redis-server.js";

const LIMIT = 2;
let upstream: Awaited<ReturnType<typeof listen>>;
let redis: RedisServer;
let dir: string;
let tokensFile: string;

beforeAll(async () => {
  upstream = await listen((_req, res) => res.end("ok"));
  redis = await RedisServer.start();
  dir = mkdtempSync(path.join(tmpdir(), "gw-identity-"));
  tokensFile = path.join(dir, "tokens.yaml");
  writeFileSync(
    tokensFile,
    "subject-token: { sub: svc, scope: read }\nclient-token: { client_id: svc, scope: read }\n" +
      "user-token: { username: svc, scope: read }\n" +
      "both-token: { sub: both, client_id: both, scope: read }\n",
  );
});

afterAll(async () => {
  await closeServer(upstream.server);
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const stores = {
  memory: () => ({}),
  redis: () => ({ redis: { url: redis.url, key_prefix: "kinds" } }),
};

describe.each(Object.keys(stores) as (keyof typeof stores)[])("on the %s store", (store) => {
  let gw: TestGateway;
  const configOf = (identity: "subject" | "client") =>
    testConfig(upstream.url, {
      auth: { static: { tokens_file: tokensFile } },
      rate_limits: {
        store: stores[store](),
        classes: { read: { identity, windows: [{ limit: LIMIT, window_s: 3600 }] } },
      },
    });

  beforeAll(async () => {
    gw = await startGateway(configOf("subject"));
  });

  afterAll(async () => {
    await gw?.close();
  });

  const call = async (token: string) =>
    (await request(`${gw.url}/v1/x`, { headers: { authorization: `Bearer ${token}` } })).status;

  it("a subject, a client and a user named alike each get their own budget", async () => {
    const statuses: Record<string, number[]> = {};
    for (const token of ["subject-token", "client-token", "user-token"]) {
      statuses[token] = [];
      for (let i = 0; i <= LIMIT; i++) statuses[token].push(await call(token));
    }
    expect(statuses).toEqual({
      "subject-token": [200, 200, 429],
      "client-token": [200, 200, 429],
      "user-token": [200, 200, 429],
    });
    if (store === "redis") {
      const keys = (await cli(redis.port, "--scan", "--pattern", "kinds:*")).split("\n").sort();
      expect(keys).toEqual([
        "kinds:{client:svc}:read:3600",
        "kinds:{sub:svc}:read:3600",
        "kinds:{user:svc}:read:3600",
      ]);
    }
  });

  it("a class switched to `identity: client` spends the client's budget, never the subject's", async () => {
    expect([await call("both-token"), await call("both-token"), await call("both-token")]).toEqual([
      200, 200, 429,
    ]);
    const file = path.join(dir, `${store}-client.yaml`);
    writeFileSync(file, stringify(configOf("client")));
    expect(await gw.gateway.reload(file)).toBe(true);
    expect([await call("both-token"), await call("both-token"), await call("both-token")]).toEqual([
      200, 200, 429,
    ]);
    if (store === "redis") {
      const keys = (await cli(redis.port, "--scan", "--pattern", "kinds:*both*")).split("\n").sort();
      expect(keys).toEqual(["kinds:{client:both}:read:3600", "kinds:{sub:both}:read:3600"]);
    }
  });
});
