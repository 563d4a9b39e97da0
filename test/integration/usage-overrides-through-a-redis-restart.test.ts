/**
 * SPEC §21 through an operation: an override made on one replica applies on the other within 1 s,
 * also after Redis restarts from a snapshot older than the last change (the change made after the
 * snapshot is lost, and as many changes follow as were lost, so the change counter lands on the
 * number the other replica last read). The other replica must apply the new override and drop the
 * lost one.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { cli, RedisServer, waitFor } from "../helpers/redis-server.js";

const TOKEN = "restart-admin-token";

describe("overrides across a Redis restart from an older snapshot", () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  let redis: RedisServer;
  let dir: string;
  let a: TestGateway;
  let b: TestGateway;

  const config = () =>
    testConfig(upstream.url, {
      admin: { host: "127.0.0.1", port: 0, token_file: path.join(dir, "admin-token") },
      auth: { realm: "api", static: { tokens_file: path.join(dir, "tokens.yaml") } },
      rate_limits: {
        store: { redis: { url: redis.url, key_prefix: "usagerestart", command_timeout_ms: 2000 } },
        classes: { read: { match: { methods: ["GET"] }, windows: [{ limit: 2, window_s: 3600 }] } },
        anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
      },
    });
  const override = (gw: TestGateway, identity: string, limit: number) =>
    request(`${gw.adminUrl}/overrides/${identity}`, {
      method: "PUT",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ classes: { read: [{ limit, window_s: 3600 }] } }),
    });
  const limitOn = async (gw: TestGateway, user: string) =>
    (await request(`${gw.url}/v1/x`, { headers: { authorization: `Bearer ${user}-token` } })).headers[
      "x-ratelimit-limit"
    ];
  /** Puts an override on `a` and returns how long `b` took to apply it (ms). */
  async function applied(identity: string, user: string, limit: number): Promise<number> {
    const put = await override(a, identity, limit);
    expect(put.status).toBe(200);
    const t0 = Date.now();
    await waitFor(`${user}'s override on b`, async () => (await limitOn(b, user)) === String(limit), 3000);
    return Date.now() - t0;
  }

  beforeAll(async () => {
    upstream = await listen((_req, res) => res.end("ok"));
    redis = await RedisServer.start();
    dir = mkdtempSync(path.join(tmpdir(), "gw-usage-restart-"));
    writeFileSync(path.join(dir, "admin-token"), `${TOKEN}\n`);
    const users = ["alice", "bob", "carol"];
    writeFileSync(
      path.join(dir, "tokens.yaml"),
      stringify(Object.fromEntries(users.map((u) => [`${u}-token`, { sub: u }]))),
    );
    [a, b] = await Promise.all([startGateway(config()), startGateway(config())]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await closeServer(upstream.server);
    await redis.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it("applies the override made after the restart on the other replica within 1 s, and drops the lost one", async () => {
    expect(await applied("sub:alice", "alice", 5)).toBeLessThanOrEqual(1000);
    expect(await cli(redis.port, "SAVE")).toBe("OK");
    expect(await applied("sub:bob", "bob", 7)).toBeLessThanOrEqual(1000);

    await redis.stop();
    await redis.start(); // loads the snapshot: alice's override, not bob's
    await waitFor("a writes to Redis again", async () => (await override(a, "sub:carol", 9)).status === 200);
    const t0 = Date.now();
    await waitFor("carol's override on b", async () => (await limitOn(b, "carol")) === "9", 3000);
    expect(Date.now() - t0).toBeLessThanOrEqual(1000);
    // Redis no longer holds bob's override: neither replica applies it.
    expect(await limitOn(b, "bob")).toBe("2");
    expect(await limitOn(a, "bob")).toBe("2");
    expect(await limitOn(b, "alice")).toBe("5");
  });
});
