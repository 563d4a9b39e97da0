/**
 * Redis memory per identity and class (SPEC §4, figures for the README): one class of 5000 calls /
 * 3600 s filled to its limit, measured with `MEMORY USAGE <key> SAMPLES 0` (every element counted).
 * `sliding_window` keeps one small hash per window whatever the traffic; `sliding_log` one sorted-set
 * entry per admitted call. A calendar window (SPEC §19) is one small hash per identity, class and
 * period kind, whatever the limit and the traffic.
 */
import { expect, it } from "vitest";
import type { Algorithm, LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { cli } from "../helpers/redis-server.js";
import { useRedisStore } from "../helpers/redis-store-fixture.js";

const redis = useRedisStore("rl");

async function fill(algorithm: Algorithm, window: LimitPolicy["windows"][number]): Promise<number> {
  const policy: LimitPolicy = { className: "read", algorithm, mode: "enforce", windows: [window] };
  const id = "u:0123456789abcdef"; // a typical identity (`sub`) length
  let admitted = 0;
  for (let i = 0; i < 10; i++) {
    const batch = await Promise.all(Array.from({ length: 500 }, () => redis.store.consume(id, policy)));
    admitted += batch.filter((d) => d.allowed).length;
  }
  expect(admitted).toBe(5000);
  expect((await redis.store.consume(id, policy)).allowed).toBe(false);
  return Number(
    await cli(redis.server.port, "MEMORY", "USAGE", redis.store.keyOf(id, policy, 0), "SAMPLES", "0"),
  );
}

it("measures the memory one identity's full 5000/hour class takes, per algorithm", async () => {
  const window = await fill("sliding_window", { limit: 5000, windowS: 3600 });
  const log = await fill("sliding_log", { limit: 5000, windowS: 3600 });
  console.log(
    `MEMORY USAGE per identity and class at 5000/3600 s, filled: sliding_window ${window} bytes, ` +
      `sliding_log ${log} bytes (${(log / 5000).toFixed(1)} bytes per admitted call)`,
  );
  expect(window).toBeLessThan(256);
  expect(log).toBeGreaterThan(5000 * 16);
  expect(log).toBeLessThan(5000 * 160);
});

it("measures a calendar window: one hash per identity, class and period, whatever the count", async () => {
  const month = await fill("sliding_log", { limit: 5000, period: "month", offsetMs: 0 });
  console.log(`MEMORY USAGE per identity and class of a month window at 5000 calls: ${month} bytes`);
  expect(month).toBeLessThan(256);
});
