/**
 * SPEC §4 `failure_mode`: with Redis killed or hung mid-run, `open` keeps answering from memory
 * with `ceil(limit / expected_replicas)` and `degraded: true`, logs once per outage (naming what
 * failed) and sets the degraded gauge; `closed` rejects with LimitStoreError. No call waits longer
 * than two command timeouts (a late reply is waited for while Redis answers: `reply-watch.ts`).
 * When Redis answers again the same limiter returns to the shared windows by itself.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../gateway/base/clock.js";
import { createLimiter, type LimiterHandle } from "../../gateway/ratelimit/create.js";
import { LimitStoreError, type Decision, type LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { RedisServer, waitFor } from "../helpers/redis-server.js";
import { captureLogger, configWith, metricValue, testMetrics } from "../helpers/redis-limiter.js";

const TIMEOUT_MS = 200;
/** Scheduling slack on a loaded 2-core CI machine. */
const MARGIN_MS = 150;
const policy: LimitPolicy = {
  className: "read",
  algorithm: "sliding_log",
  mode: "enforce",
  windows: [{ limit: 10, windowS: 60 }],
};

function setup(failureMode: "open" | "closed") {
  const ctx = {
    server: undefined as unknown as RedisServer,
    handle: undefined as unknown as LimiterHandle,
    ...testMetrics(),
    ...captureLogger(),
  };
  beforeAll(async () => {
    ctx.server = await RedisServer.start();
    const config = configWith({
      store: {
        redis: { url: ctx.server.url, key_prefix: `fo-${failureMode}`, command_timeout_ms: TIMEOUT_MS },
      },
      failure_mode: failureMode,
      expected_replicas: 3,
      classes: { read: { windows: [{ limit: 10, window_s: 60 }] } },
    });
    ctx.handle = createLimiter(config, {
      clock: new ManualClock(),
      metrics: ctx.metrics,
      logger: ctx.logger,
      probeIntervalMs: 100,
    });
  });
  afterAll(async () => {
    await ctx.handle.limiter.close();
    await ctx.server.destroy();
  });
  return ctx;
}

/** Runs a call and checks it settled within two command timeouts (+ margin). */
async function timed<T>(call: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await call();
  } finally {
    expect(performance.now() - started).toBeLessThan(2 * TIMEOUT_MS + MARGIN_MS);
  }
}

/** Polls with a throwaway identity until the limiter answers from Redis again. */
async function waitForShared(handle: LimiterHandle): Promise<void> {
  await waitFor(
    "shared windows to resume",
    async () => !(await handle.limiter.consume("u:poll", policy)).degraded,
  );
}

describe("failure_mode: open", () => {
  const ctx = setup("open");

  it("answers from memory with ceil(limit / expected_replicas) while Redis is down, then resumes", async () => {
    const { handle, server, registry, lines } = ctx;
    expect((await handle.limiter.consume("u:a", policy)).degraded).toBe(false);
    await server.stop();

    const during: Decision[] = [];
    for (let i = 0; i < 6; i++) during.push(await timed(() => handle.limiter.consume("u:a", policy)));
    expect(during.every((d) => d.degraded && d.limit === 4)).toBe(true);
    expect(during.map((d) => d.allowed)).toEqual([true, true, true, true, false, false]);
    expect(handle.ready()).toBe(true);
    expect(await metricValue(registry, "gateway_ratelimit_store_degraded")).toBe(1);
    expect(await metricValue(registry, "gateway_ratelimit_store_errors_total")).toBeGreaterThanOrEqual(1);
    expect(lines.filter((l) => l.level === "error")).toHaveLength(1);

    await server.start();
    await waitForShared(handle);
    const after = await handle.limiter.consume("u:a", policy);
    // Redis restarted empty (no persistence): the shared window starts over, at the full limit
    expect(after).toMatchObject({ degraded: false, allowed: true, limit: 10, remaining: 9 });
    expect(await metricValue(registry, "gateway_ratelimit_store_degraded")).toBe(0);
    const recovered = lines.filter((l) => l.level === "warn");
    expect(recovered).toHaveLength(1);
    expect(recovered[0]!.outageMs).toEqual(expect.any(Number));
    expect(lines.filter((l) => l.level === "error")).toHaveLength(1);
  });

  it("a hung Redis (SIGSTOP) costs at most two command timeouts, then calls degrade at once", async () => {
    const { handle, server, lines } = ctx;
    const errorsBefore = lines.filter((l) => l.level === "error").length;
    server.pause();
    try {
      for (let i = 0; i < 5; i++)
        expect((await timed(() => handle.limiter.consume("u:b", policy))).degraded).toBe(true);
      const started = performance.now();
      await handle.limiter.consume("u:b", policy);
      expect(performance.now() - started).toBeLessThan(20);
    } finally {
      server.resume();
    }
    expect(lines.filter((l) => l.level === "error")).toHaveLength(errorsBefore + 1);
    await waitForShared(handle);
  });
});

describe("failure_mode: closed", () => {
  const ctx = setup("closed");

  it("rejects with LimitStoreError while Redis is down and is not ready, then resumes", async () => {
    const { handle, server } = ctx;
    expect((await handle.limiter.consume("u:c", policy)).allowed).toBe(true);
    await server.stop();
    for (let i = 0; i < 3; i++) {
      await expect(timed(() => handle.limiter.consume("u:c", policy))).rejects.toBeInstanceOf(
        LimitStoreError,
      );
    }
    await expect(timed(() => handle.limiter.peek("u:c", policy))).rejects.toBeInstanceOf(LimitStoreError);
    expect(handle.ready()).toBe(false);

    await server.start();
    await waitFor("closed limiter to answer", async () => {
      await handle.limiter.consume("u:poll", policy);
      return true;
    });
    expect(handle.ready()).toBe(true);
    expect(await handle.limiter.consume("u:c", policy)).toMatchObject({
      allowed: true,
      degraded: false,
      limit: 10,
    });
  });
});
