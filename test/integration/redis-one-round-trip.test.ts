/**
 * SPEC §4: one round trip per call — one `EVALSHA` covering every window, whatever the number of
 * windows, sliding or calendar (SPEC §19), for consume and peek alike. Measured with the server's
 * own `INFO commandstats`.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { useRedisStore } from "../helpers/redis-store-fixture.js";

const redis = useRedisStore("rt");
let admin: Redis;

beforeAll(async () => {
  // Wait for `ready`: ioredis writes INFO (a command flagged `loading`) even before its connection
  // is ready, and its own ready check (another INFO) would then land inside the measured span.
  admin = new Redis(redis.server.port, "127.0.0.1", { lazyConnect: true });
  await admin.connect();
});

afterAll(() => {
  admin.disconnect();
});

/** Calls per command from `INFO commandstats` (`cmdstat_evalsha:calls=12,...`). */
async function commandCalls(): Promise<Map<string, number>> {
  const info = await admin.info("commandstats");
  const calls = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(m[1]!, Number(m[2]));
  return calls;
}

const policies: LimitPolicy[] = (["sliding_window", "sliding_log"] as const).flatMap((algorithm) => [
  {
    className: algorithm,
    algorithm,
    mode: "enforce",
    windows: [
      { limit: 10, windowS: 1 },
      { limit: 50, windowS: 60 },
      { limit: 1000, windowS: 3600 },
    ],
  },
  {
    className: `${algorithm}_quota`,
    algorithm,
    mode: "enforce",
    windows: [
      { limit: 10, windowS: 1 },
      { limit: 1000, period: "day", offsetMs: 0 },
      { limit: 10000, period: "month", offsetMs: 9 * 3_600_000 },
    ],
  },
]);

it("sends exactly one EVALSHA per consume or peek, and nothing else", async () => {
  // Load both scripts first: the very first call of a script is EVALSHA → NOSCRIPT → EVAL.
  for (const p of policies) await redis.store.consume("u:warmup", p);
  const before = await commandCalls();
  let calls = 0;
  for (const p of policies) {
    for (let i = 0; i < 30; i++) {
      await (i % 5 === 0 ? redis.store.peek(`u:${i % 3}`, p) : redis.store.consume(`u:${i % 3}`, p));
      calls++;
    }
  }
  const after = await commandCalls();
  const delta = new Map([...after].map(([cmd, n]) => [cmd, n - (before.get(cmd) ?? 0)]));
  // Exactly our own INFO (the `before` one); a per-call INFO would show ~60.
  expect(delta.get("info")).toBe(1);
  delta.delete("info");
  // commandstats also counts the commands a script runs; everything else must be unchanged
  const inScripts = new Set([
    "time",
    "hmget",
    "hset",
    "pexpire",
    "pexpireat",
    "zremrangebyscore",
    "zcard",
    "zcount",
    "zrange",
    "zadd",
  ]);
  const others = [...delta].filter(([cmd, n]) => cmd !== "evalsha" && !inScripts.has(cmd) && n !== 0);
  expect(delta.get("evalsha")).toBe(calls);
  expect(others).toEqual([]);
});

/** Read events the server has processed (`INFO stats` `total_reads_processed`). */
async function serverReads(): Promise<number> {
  const info = await admin.info("stats");
  return Number(/^total_reads_processed:(\d+)/m.exec(info)![1]);
}

it("sends the calls of one event-loop turn in one write: the server reads them at once", async () => {
  const policy = policies[0]!;
  await redis.store.consume("batch:warmup", policy);
  // Awaited one by one, each call is its own write and its own read on the server.
  let before = await serverReads();
  for (let i = 0; i < 20; i++) await redis.store.consume("batch:serial", policy);
  expect((await serverReads()) - before - 1).toBeGreaterThanOrEqual(20);

  // Issued in one turn, 50 calls leave corked together: one writev, read in one or two events.
  before = await serverReads();
  const decisions = await Promise.all(
    Array.from({ length: 50 }, () => redis.store.consume("batch:turn", policy)),
  );
  expect((await serverReads()) - before - 1).toBeLessThanOrEqual(2);
  // Still 50 separate calls, each counted once, in order.
  expect(decisions.map((d) => d.remaining)).toEqual(Array.from({ length: 50 }, (_, i) => Math.max(0, 9 - i)));
});

it("after Redis lost its scripts (SCRIPT FLUSH), a call meets NOSCRIPT once, is sent again as EVAL and counted once", async () => {
  const policy = policies[1]!; // sliding_log: each counted call is one member of the log
  await redis.store.consume("flush:warmup", policy);
  await admin.script("FLUSH");
  const before = await commandCalls();
  const first = await redis.store.consume("flush:user", policy);
  const second = await redis.store.consume("flush:user", policy);
  const after = await commandCalls();
  const delta = (cmd: string): number => (after.get(cmd) ?? 0) - (before.get(cmd) ?? 0);
  // The first call: EVALSHA (NOSCRIPT, not run), then EVAL; the second: one EVALSHA again.
  expect(delta("eval")).toBe(1);
  expect(delta("evalsha")).toBe(2);
  expect([first.allowed, first.remaining, second.remaining]).toEqual([true, 9, 8]);
});
