/**
 * Identities are keyed with their kind (issue 11 §4, SPEC §10): a token whose `sub` is "svc" and
 * one that only has `client_id: svc` spend two budgets, in the memory store and in Redis; and the
 * keys the Redis store writes carry the kind (`{sub:svc}`, `{client:svc}`).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
      "user-token: { username: svc, scope: read }\n",
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

  beforeAll(async () => {
    gw = await startGateway(
      testConfig(upstream.url, {
        auth: { static: { tokens_file: tokensFile } },
        rate_limits: {
          store: stores[store](),
          classes: { read: { windows: [{ limit: LIMIT, window_s: 3600 }] } },
        },
      }),
    );
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
});
