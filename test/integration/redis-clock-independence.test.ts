/**
 * SPEC §4: time comes from Redis `TIME`, so replicas whose own clocks disagree by minutes still
 * agree on decisions and `Reset`. Two limiters built by `createLimiter` with manual clocks ten
 * minutes apart (and far from real time) share one Redis.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { ManualClock } from "../../gateway/base/clock.js";
import { createLimiter, type LimiterHandle } from "../../gateway/ratelimit/create.js";
import type { Algorithm, LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { RedisServer } from "../helpers/redis-server.js";
import { captureLogger, configWith, testMetrics } from "../helpers/redis-limiter.js";

let server: RedisServer;
let a: LimiterHandle;
let b: LimiterHandle;

beforeAll(async () => {
  server = await RedisServer.start();
  const config = configWith({
    store: { redis: { url: server.url, key_prefix: "skew", command_timeout_ms: 2000 } },
    classes: { read: { windows: [{ limit: 10, window_s: 60 }] } },
  });
  const base = Date.now() - 3_600_000;
  a = createLimiter(config, { clock: new ManualClock(base), ...testMetrics(), ...captureLogger() });
  b = createLimiter(config, { clock: new ManualClock(base + 600_000), ...testMetrics(), ...captureLogger() });
});

afterAll(async () => {
  await Promise.all([a.limiter.close(), b.limiter.close()]);
  await server.destroy();
});

it.each(["sliding_log", "sliding_window"] as const)(
  "%s: replicas with clocks minutes apart share one window and report Redis time",
  async (algorithm: Algorithm) => {
    const policy: LimitPolicy = {
      className: algorithm,
      algorithm,
      mode: "enforce",
      windows: [{ limit: 10, windowS: 60 }],
    };
    const decisions = [];
    for (let i = 0; i < 14; i++)
      decisions.push(await (i % 2 === 0 ? a : b).limiter.consume("u:skew", policy));
    expect(decisions.map((d) => d.allowed)).toEqual([...Array(10).fill(true), ...Array(4).fill(false)]);
    expect(decisions.map((d) => d.remaining)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0, 0, 0]);
    for (const d of decisions) {
      expect(d.degraded).toBe(false);
      // Redis TIME (this machine's real clock), not either manual clock
      expect(Math.abs(d.nowMs - Date.now())).toBeLessThan(5000);
      expect(d.resetAtMs).toBeGreaterThan(d.nowMs);
      // sliding_window: a call in the current fixed window still weighs on the next one
      expect(d.resetAtMs).toBeLessThanOrEqual(d.nowMs + (algorithm === "sliding_log" ? 60_000 : 120_000));
    }
    if (algorithm === "sliding_log") {
      // the oldest admitted call frees capacity: the same Reset from both replicas
      expect(new Set(decisions.map((d) => d.resetAtMs)).size).toBe(1);
    }
    const [pa, pb] = [await a.limiter.peek("u:skew", policy), await b.limiter.peek("u:skew", policy)];
    expect(pa.remaining).toBe(pb.remaining);
    expect(Math.abs(pa.resetAtMs - pb.resetAtMs)).toBeLessThanOrEqual(Math.max(1, pb.nowMs - pa.nowMs));
  },
);
