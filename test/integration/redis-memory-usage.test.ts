/**
 * Redis memory per identity and class (SPEC §4, figures for the README): one class of 5000 calls /
 * 3600 s filled to its limit, measured with `MEMORY USAGE <key> SAMPLES 0` (every element counted).
 * `sliding_window` keeps one small hash per window whatever the traffic; `sliding_log` one sorted-set
 * entry per admitted call.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Algorithm, LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { RedisStore } from "../../gateway/ratelimit/redis-store.js";
import { cli, RedisServer } from "../helpers/redis-server.js";

let server: RedisServer;
let store: RedisStore;

beforeAll(async () => {
  server = await RedisServer.start();
  store = new RedisStore({ redis: { url: server.url, key_prefix: "rl", command_timeout_ms: 5000 } });
});

afterAll(async () => {
  await store.close();
  await server.destroy();
});

async function fill(algorithm: Algorithm): Promise<number> {
  const policy: LimitPolicy = {
    name: "read",
    algorithm,
    mode: "enforce",
    windows: [{ limit: 5000, windowS: 3600 }],
  };
  const id = "u:0123456789abcdef"; // a typical identity (`sub`) length
  let admitted = 0;
  for (let i = 0; i < 10; i++) {
    const batch = await Promise.all(Array.from({ length: 500 }, () => store.consume(id, policy)));
    admitted += batch.filter((d) => d.allowed).length;
  }
  expect(admitted).toBe(5000);
  expect((await store.consume(id, policy)).allowed).toBe(false);
  return Number(await cli(server.port, "MEMORY", "USAGE", store.keyOf(id, policy, 0), "SAMPLES", "0"));
}

it("measures the memory one identity's full 5000/hour class takes, per algorithm", async () => {
  const window = await fill("sliding_window");
  const log = await fill("sliding_log");
  console.log(
    `MEMORY USAGE per identity and class at 5000/3600 s, filled: sliding_window ${window} bytes, ` +
      `sliding_log ${log} bytes (${(log / 5000).toFixed(1)} bytes per admitted call)`,
  );
  expect(window).toBeLessThan(256);
  expect(log).toBeGreaterThan(5000 * 16);
  expect(log).toBeLessThan(5000 * 160);
});
