/**
 * SPEC §4/§7 Sentinel deployment: the store finds the primary through Sentinel, and after
 * `SENTINEL FAILOVER` follows the promoted replica by itself and keeps enforcing the limit.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { RedisStore } from "../../gateway/ratelimit/redis-store.js";
import { cli, startSentinel, waitFor } from "../helpers/redis-server.js";

let group: Awaited<ReturnType<typeof startSentinel>>;
let store: RedisStore;
const policy: LimitPolicy = {
  className: "write",
  algorithm: "sliding_log",
  mode: "enforce",
  windows: [{ limit: 25, windowS: 60 }],
};

async function admitted(key: string, calls: number): Promise<number> {
  const decisions = await Promise.all(Array.from({ length: calls }, () => store.consume(key, policy)));
  return decisions.filter((d) => d.allowed).length;
}

beforeAll(async () => {
  group = await startSentinel("gwmaster");
  store = new RedisStore({
    redis: { sentinels: [group.sentinel.url], name: "gwmaster", key_prefix: "sen", command_timeout_ms: 2000 },
  });
}, 60_000);

afterAll(async () => {
  await store?.close();
  await group?.destroy();
});

it("follows the new primary after SENTINEL FAILOVER and keeps enforcing", async () => {
  expect(await admitted("u:before", 40)).toBe(25);
  expect(await cli(group.primary.port, "ZCARD", store.keyOf("u:before", policy, 0))).toBe("25");

  const beforeKey = store.keyOf("u:before", policy, 0);
  await waitFor(
    "the replica to catch up",
    async () => (await cli(group.replica.port, "ZCARD", beforeKey)) === "25",
  );
  // The sentinel learns of the replica from the primary's INFO (every 10 s): until then FAILOVER
  // answers NOGOODSLAVE, so ask until it is accepted.
  await waitFor(
    "the sentinel to accept the failover",
    async () => (await cli(group.sentinel.port, "SENTINEL", "FAILOVER", "gwmaster")) === "OK",
    20_000,
  );
  await waitFor(
    "the replica to be promoted",
    async () => (await cli(group.replica.port, "ROLE")).startsWith("master"),
    15_000,
  );
  // Calls may fail while the store reconnects; once one succeeds it must be on the new primary.
  await waitFor(
    "the store to write to the new primary",
    async () => {
      await store.consume("u:probe", policy);
      return (await cli(group.replica.port, "EXISTS", store.keyOf("u:probe", policy, 0))) === "1";
    },
    15_000,
  );
  expect(await admitted("u:after", 40)).toBe(25);
  expect(await cli(group.replica.port, "ZCARD", store.keyOf("u:after", policy, 0))).toBe("25");
  // the window counted before the failover was replicated and is still enforced
  expect((await store.consume("u:before", policy)).allowed).toBe(false);
}, 40_000);
