/**
 * SPEC §21 at the store: a count or a charge reports the threshold crossings of calendar windows in
 * its own reply (one EVALSHA), once per identity, class, period and threshold across two stores
 * sharing one real redis-server (two replicas), and a refusal by a spent calendar window crosses the
 * threshold 1; the memory store reports the same crossings for the same calls; the top-caller set
 * holds each identity's exact count. Without thresholds the reply carries none.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { systemClock } from "../../gateway/base/clock.js";
import type { Crossing, LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { MemoryAdminStore } from "../../gateway/ratelimit/admin-store.js";
import { MemoryStore } from "../../gateway/ratelimit/memory-store.js";
import { Overrides } from "../../gateway/ratelimit/overrides.js";
import { RedisStore } from "../../gateway/ratelimit/redis-store.js";
import { RedisServer } from "../helpers/redis-server.js";

let server: RedisServer;
let one: RedisStore;
let two: RedisStore;

beforeAll(async () => {
  server = await RedisServer.start();
  const redis = { url: server.url, key_prefix: "cross", command_timeout_ms: 5000 };
  one = new RedisStore({ redis });
  two = new RedisStore({ redis });
});

afterAll(async () => {
  await one?.close();
  await two?.close();
  await server?.destroy();
});

const policy = (cost: number, thresholds?: number[]): LimitPolicy => ({
  className: cost === 1 ? "read" : "search",
  algorithm: "sliding_window",
  mode: "enforce",
  windows: [
    { limit: 1000, windowS: 60 },
    { limit: 10, period: "month", offsetMs: 0 },
  ],
  cost,
  topCallers: true,
  ...(thresholds === undefined ? {} : { thresholds }),
});

/** Calls alternating over the stores; the crossings each call reported, by call number. */
async function run(
  stores: { consume: RedisStore["consume"] }[],
  id: string,
  p: LimitPolicy,
  calls: number,
): Promise<Record<number, readonly Crossing[]>> {
  const seen: Record<number, readonly Crossing[]> = {};
  for (let i = 1; i <= calls; i++) {
    const d = await stores[i % stores.length]!.consume(id, p);
    if (d.crossings !== undefined) seen[i] = d.crossings;
  }
  return seen;
}

it("reports each crossing once across replicas, a refusal by the spent window as 1, as the memory store does", async () => {
  const read = policy(1, [0.5, 1]);
  const search = policy(3, [0.5, 1]);
  const expected = {
    read: {
      5: [{ windowIndex: 1, threshold: 0.5, used: 5 }],
      10: [{ windowIndex: 1, threshold: 1, used: 10 }],
    },
    // cost 3: 3, 6 (crosses 5), 9, then refused (9 + 3 > 10): the window is spent for this call.
    search: {
      2: [{ windowIndex: 1, threshold: 0.5, used: 6 }],
      4: [{ windowIndex: 1, threshold: 1, used: 9 }],
    },
  };
  expect(await run([one, two], "sub:ann", read, 14)).toEqual(expected.read);
  expect(await run([one, two], "sub:ann", search, 6)).toEqual(expected.search);
  const memory = new MemoryStore({ clock: systemClock });
  expect(await run([memory], "sub:ann", read, 14)).toEqual(expected.read);
  expect(await run([memory], "sub:ann", search, 6)).toEqual(expected.search);

  // The top-caller set: exact counts, heaviest first, on either replica and in memory.
  await run([one, two], "sub:bob", read, 3);
  await run([memory], "sub:bob", read, 3);
  const top = [
    { identity: "sub:ann", used: 10 },
    { identity: "sub:bob", used: 3 },
  ];
  expect(await one.top("read", "month", 10)).toEqual(top);
  expect(await two.top("read", "month", 1)).toEqual(top.slice(0, 1));
  expect(await memory.top("read", "month", 10)).toEqual(top);
  // The set expires when the month ends.
  const ttl = await one.client.pttl("cross:top:read:month");
  expect(ttl).toBeGreaterThan(0);
  expect(ttl).toBeLessThanOrEqual(31 * 86_400_000);
});

it("a reset takes the identity off the top list and lets its crossings be reported again (memory store)", async () => {
  const memory = new MemoryStore({ clock: systemClock });
  const read = policy(1, [0.5, 1]);
  await run([memory], "sub:cy", read, 6);
  await run([memory], "sub:di", read, 2);
  const admin = new MemoryAdminStore(new Overrides(), memory, () => Date.now());
  await admin.deleteKeys(
    "sub:cy",
    memory.forgetWhere((k) => k.includes("sub:cy"), true),
    ["read"],
  );
  expect(await memory.top("read", "month", 10)).toEqual([{ identity: "sub:di", used: 2 }]);
  // As in Redis, whose marks live in the deleted window hashes: the next 0.5 is a new crossing.
  expect(await run([memory], "sub:cy", read, 5)).toEqual({
    5: [{ windowIndex: 1, threshold: 0.5, used: 5 }],
  });
});

it("reports nothing without thresholds, and a charge crosses like a count", async () => {
  const plain = policy(1);
  expect(await run([one, two], "sub:cat", plain, 12)).toEqual({});
  const read = policy(1, [0.8]);
  const d = await one.charge("sub:dan", read, 9);
  expect(d.crossings).toEqual([{ windowIndex: 1, threshold: 0.8, used: 9 }]);
  expect((await two.charge("sub:dan", read, 1)).crossings).toBeUndefined();
});

it("marks a notified crossing by its fraction, so a reload that changes the list keeps the marks (memory store)", async () => {
  const memory = new MemoryStore({ clock: systemClock });
  const before = policy(1, [0.8, 1]);
  expect(await run([memory], "sub:ed", before, 8)).toEqual({
    8: [{ windowIndex: 1, threshold: 0.8, used: 8 }],
  });
  // A reload adds 0.5 in front and an override doubles the month: 0.5 of 20 is crossed at 10.
  const after: LimitPolicy = {
    ...before,
    windows: [before.windows[0]!, { limit: 20, period: "month", offsetMs: 0 }],
    thresholds: [0.5, 0.8, 1],
  };
  expect(await run([memory], "sub:ed", after, 2)).toEqual({
    2: [{ windowIndex: 1, threshold: 0.5, used: 10 }],
  });
});
