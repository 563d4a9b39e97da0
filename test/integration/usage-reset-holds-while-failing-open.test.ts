/**
 * A reset quota is not spent any more when Redis then fails (SPEC §21 with §19): a replica keeps
 * the calendar counts it last saw so that a spent quota stays spent while failing open; a reset
 * (made on the other replica) makes it forget them, so the identity's calls are admitted by the
 * fail-open fallback rather than refused as before the reset.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { RedisServer, waitFor } from "../helpers/redis-server.js";

const TOKEN = "failing-open-admin-token";
let upstream: Awaited<ReturnType<typeof listen>>;
let redis: RedisServer;
let dir: string;
let a: TestGateway;
let b: TestGateway;

beforeAll(async () => {
  upstream = await listen((_req, res) => res.end("ok"));
  redis = await RedisServer.start();
  dir = mkdtempSync(path.join(tmpdir(), "gw-usage-open-"));
  writeFileSync(path.join(dir, "admin-token"), TOKEN);
  const config = testConfig(upstream.url, {
    admin: { host: "127.0.0.1", port: 0, token_file: path.join(dir, "admin-token") },
    rate_limits: {
      store: { redis: { url: redis.url, key_prefix: "usage-open", command_timeout_ms: 500 } },
      failure_mode: "open",
      classes: { read: { match: { methods: ["GET"] }, windows: [{ limit: 3, period: "month" }] } },
      anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
    },
  });
  [a, b] = await Promise.all([startGateway(config), startGateway(config)]);
});

afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await closeServer(upstream.server);
  await redis.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const call = (gw: TestGateway) =>
  request(`${gw.url}/v1/x`, { headers: { authorization: "Bearer valid-token" } });

it("forgets the spent quota it remembered once the identity is reset", async () => {
  for (let i = 0; i < 3; i++) expect((await call(b)).status).toBe(200);
  expect((await call(b)).status).toBe(429);
  const reset = await request(`${a.adminUrl}/usage/sub:alice/reset`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  expect(reset.status).toBe(200);
  // No call of alice reaches b meanwhile (it would learn the new count from Redis's reply): b learns
  // of the reset within the 1 s every replica is given.
  const t0 = performance.now();
  await waitFor("1 s", async () => performance.now() - t0 >= 1000, 2000);
  await redis.stop();
  // Failing open: b's fallback counts from zero, not from the 3 it saw before the reset.
  const r = await call(b);
  expect(r.status).toBe(200);
  expect(r.headers["x-ratelimit-remaining"]).toBe("2");
});
