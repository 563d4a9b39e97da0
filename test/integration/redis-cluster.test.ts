/**
 * SPEC §4 on a real three-master Redis Cluster: limits are enforced for identities spread over the
 * masters, and every key of one identity (all classes, all windows) hashes to one slot, so each
 * call is one EVALSHA on one node; with an organisation's budgets (SPEC §22), every key of a call
 * takes the budget's tag. Top callers (SPEC §21) are kept there by a command sent after the
 * script (the set is in another slot), and threshold crossings are reported once.
 */
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import type { LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { RedisStore } from "../../gateway/ratelimit/redis-store.js";
import { cli, startCluster } from "../helpers/redis-server.js";

let cluster: Awaited<ReturnType<typeof startCluster>>;
let a: RedisStore;
let b: RedisStore;

const policies: LimitPolicy[] = [
  {
    className: "write",
    algorithm: "sliding_log",
    mode: "enforce",
    windows: [
      { limit: 20, windowS: 60 },
      { limit: 100, windowS: 3600 },
    ],
  },
  {
    className: "read",
    algorithm: "sliding_window",
    mode: "enforce",
    windows: [{ limit: 30, windowS: 3600 }],
  },
];
const identities = Array.from({ length: 12 }, (_, i) => `u:user-${i}`);

beforeAll(async () => {
  cluster = await startCluster();
  const redis = {
    cluster: cluster.nodes.map((n) => n.url),
    key_prefix: "cl",
    command_timeout_ms: 5000,
  };
  a = new RedisStore({ redis });
  b = new RedisStore({ redis });
  await Promise.all(
    [a, b].map(
      (s) => new Promise((r) => (s.client.status === "ready" ? r(null) : s.client.once("ready", r))),
    ),
  );
}, 60_000);

afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await cluster?.destroy();
});

it("enforces each identity's limits across three masters from two stores", async () => {
  const results = await Promise.all(
    identities.flatMap((id) =>
      policies.map(async (p) => {
        const calls = Array.from({ length: 45 }, (_, i) => (i % 2 === 0 ? a : b).consume(id, p));
        return (await Promise.all(calls)).filter((d) => d.allowed).length;
      }),
    ),
  );
  expect(results).toEqual(identities.flatMap(() => [20, 30]));
});

it("puts every key of one identity in one slot, and identities on every master", async () => {
  const ports = new Set<number>();
  for (const id of identities) {
    const keys = policies.flatMap((p) => p.windows.map((_, i) => a.keyOf(id, p, i)));
    const slots = new Set(
      await Promise.all(keys.map((k) => cli(cluster.nodes[0]!.port, "CLUSTER", "KEYSLOT", k))),
    );
    expect(slots.size).toBe(1);
    // the keys live on the master that owns the slot
    const owner = await Promise.all(
      cluster.nodes.map(async (n) => ((await cli(n.port, "EXISTS", keys[0]!)) === "1" ? n.port : 0)),
    );
    expect(owner.filter((p) => p !== 0)).toHaveLength(1);
    ports.add(owner.find((p) => p !== 0)!);
  }
  expect(ports.size).toBe(3);
});

it("counts an organisation's budget across masters: every key of a call in the budget's slot", async () => {
  // SPEC §22: two budgets (an organisation, a team) beside each user's own window.
  const p: LimitPolicy = {
    className: "search",
    algorithm: "sliding_log",
    mode: "enforce",
    windows: [{ limit: 10, windowS: 60 }],
    budgets: [
      { key: "claim:org_id", claim: "org_id", windows: [{ limit: 24, windowS: 60 }] },
      { key: "claim:team", claim: "team", windows: [{ limit: 1000, period: "day", offsetMs: 0 }] },
    ],
    cost: 2,
  };
  const users = identities.slice(0, 6);
  const budgets = ["claim:org_id:acme", "claim:team:red"];
  // Six users whose own keys would hash to every master; 60 units each asked, 24 for the org.
  const calls = users.flatMap((id, u) =>
    Array.from({ length: 5 }, (_, i) => ((i + u) % 2 === 0 ? a : b).consume(id, p, null, budgets)),
  );
  const admitted = (await Promise.all(calls)).filter((d) => d.allowed).length;
  expect(admitted).toBe(24 / 2);
  const keys = users.flatMap((id) => [0, 1, 2].map((i) => a.keyOf(id, p, i, budgets)));
  const slots = new Set(
    await Promise.all(keys.map((k) => cli(cluster.nodes[0]!.port, "CLUSTER", "KEYSLOT", k))),
  );
  expect(slots.size).toBe(1);
  // A user without the claims keeps the slot of their own tag.
  expect(a.keyOf(users[0]!, p, 0, [null, null])).toBe(a.keyOf(users[0]!, p, 0));
});

it("keeps top callers and reports each threshold crossing once on Cluster (SPEC §21)", async () => {
  const p: LimitPolicy = {
    className: "quota",
    algorithm: "sliding_window",
    mode: "enforce",
    windows: [{ limit: 8, period: "month", offsetMs: 0 }],
    thresholds: [0.5, 1],
    topCallers: true,
  };
  const users = identities.slice(0, 6);
  // User i makes i + 3 calls, spread over both stores, concurrently.
  const decisions = await Promise.all(
    users.flatMap((id, u) =>
      Array.from({ length: u + 3 }, (_, i) => ((i + u) % 2 === 0 ? a : b).consume(id, p)),
    ),
  );
  const crossings = decisions.flatMap((d) => d.crossings ?? []);
  // 0.5 (4 of 8): users 1-5 (4 calls or more); 1 (8 of 8): user 5 alone (8 calls).
  expect(crossings.filter((c) => c.threshold === 0.5)).toHaveLength(5);
  expect(crossings.filter((c) => c.threshold === 1)).toHaveLength(1);
  // The set is updated by a command nobody waited for: it lands right after the calls.
  const expected = users
    .map((id, u) => ({ identity: id, used: Math.min(u + 3, 8) }))
    .sort((x, y) => y.used - x.used || (x.identity < y.identity ? 1 : -1));
  await vi.waitFor(async () => expect(await a.top("quota", "month", 10)).toEqual(expected));
  expect(await b.top("quota", "month", 3)).toEqual(expected.slice(0, 3));
});
