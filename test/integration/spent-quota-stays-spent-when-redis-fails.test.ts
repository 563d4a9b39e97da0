/**
 * SPEC §19 "A spent quota stays spent when Redis fails": while failing open, a calendar window's
 * degraded count for a caller starts from the last count this replica saw for it in the current
 * period (not from zero), and a caller this replica saw over a calendar limit stays refused until
 * the period ends. A real redis-server is killed mid-test.
 */
import { afterEach, describe, expect, it } from "vitest";
import pino from "pino";
import { systemClock } from "../../gateway/base/clock.js";
import { periodBounds } from "../../gateway/ratelimit/calendar.js";
import { createLimiter, type LimiterHandle } from "../../gateway/ratelimit/create.js";
import { FailoverLimiter } from "../../gateway/ratelimit/failover.js";
import type { Decision, Limiter, LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { MemoryStore } from "../../gateway/ratelimit/memory-store.js";
import { RedisStore } from "../../gateway/ratelimit/redis-store.js";
import { SpentQuotas } from "../../gateway/ratelimit/spent-quotas.js";
import { RedisServer } from "../helpers/redis-server.js";
import { configWith, testMetrics } from "../helpers/redis-limiter.js";

const monthly: LimitPolicy = {
  className: "read",
  algorithm: "sliding_window",
  mode: "enforce",
  windows: [{ limit: 5, period: "month", offsetMs: 0 }],
};

/** The end of the current month (UTC): when a refused caller is admitted again. */
const monthEndMs = (): number => periodBounds(Date.now(), "month", 0, { startMs: 0, endMs: 0 }).endMs;

async function calls(limiter: Limiter, key: string, n: number): Promise<Decision[]> {
  const out: Decision[] = [];
  for (let i = 0; i < n; i++) out.push(await limiter.consume(key, monthly));
  return out;
}

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("failing open with calendar windows", () => {
  it("counts on from the last count Redis gave this replica, per caller", async () => {
    const server = await RedisServer.start();
    cleanup.push(() => server.destroy());
    const prefix = `spent-${process.pid}-${Date.now()}`;
    const handle: LimiterHandle = createLimiter(
      configWith({
        store: { redis: { url: server.url, key_prefix: prefix, command_timeout_ms: 200 } },
        failure_mode: "open",
        classes: { read: { windows: [{ limit: 5, period: "month" }] } },
      }),
      { clock: systemClock, ...testMetrics(), logger: pino({ level: "silent" }), probeIntervalMs: 60_000 },
    );
    cleanup.push(() => handle.limiter.close());
    await handle.started();

    const shared = await calls(handle.limiter, "sub:alice", 3);
    expect(shared.map((d) => [d.allowed, d.remaining, d.degraded])).toEqual([
      [true, 4, false],
      [true, 3, false],
      [true, 2, false],
    ]);

    await server.stop();
    const degraded = await calls(handle.limiter, "sub:alice", 3);
    // 3 spent before the outage: 2 more, then refused until the month ends (not 5 more).
    expect(degraded.map((d) => [d.allowed, d.remaining, d.degraded])).toEqual([
      [true, 1, true],
      [true, 0, true],
      [false, 0, true],
    ]);
    expect(degraded[2]!.resetAtMs).toBe(monthEndMs());
    // A caller this replica never saw starts from zero.
    const fresh = await calls(handle.limiter, "sub:bob", 6);
    expect(fresh.filter((d) => d.allowed)).toHaveLength(5);
  });

  it("a caller seen over the limit stays refused until the period ends", async () => {
    const server = await RedisServer.start();
    cleanup.push(() => server.destroy());
    const prefix = `spent-over-${process.pid}-${Date.now()}`;
    // The failover alone (no rejection cache in front), so the refusal is the spent quota's doing.
    const limiter = new FailoverLimiter({
      primary: new RedisStore({ redis: redisConfig(server.url, prefix) }),
      fallback: new MemoryStore({ clock: systemClock }),
      spentQuotas: new SpentQuotas(),
      failureMode: "open",
      clock: systemClock,
      metrics: testMetrics().metrics,
      logger: pino({ level: "silent" }),
      probeIntervalMs: 60_000,
    });
    cleanup.push(() => limiter.close());

    const shared = await calls(limiter, "sub:carol", 6);
    expect(shared.map((d) => d.allowed)).toEqual([true, true, true, true, true, false]);
    expect(shared.every((d) => !d.degraded)).toBe(true);

    await server.stop();
    const degraded = await calls(limiter, "sub:carol", 3);
    expect(degraded.map((d) => [d.allowed, d.degraded, d.resetAtMs])).toEqual(
      Array(3).fill([false, true, monthEndMs()]),
    );
  });
});

function redisConfig(url: string, keyPrefix: string) {
  return configWith({
    store: { redis: { url, key_prefix: keyPrefix, command_timeout_ms: 200 } },
    classes: { read: { windows: [{ limit: 5, period: "month" }] } },
  }).rate_limits.store.redis!;
}
