/**
 * The overrides registry (SPEC §21): an identity's override replaces the windows of the classes it
 * names, keeping the class's algorithm, mode, plan label, budgets and cost; its policy is compiled
 * once per override and base policy (the rejection cache keys on that object), a new override
 * gives a new one, an unchanged one survives a refresh, and it ends at `expires_at`. The rejection
 * cache forgets an identity's entries (and only those) when told.
 */
import { describe, expect, it } from "vitest";
import { ManualClock, systemClock } from "../../gateway/base/clock.js";
import { MemoryStore } from "../../gateway/ratelimit/memory-store.js";
import { Overrides, type Override } from "../../gateway/ratelimit/overrides.js";
import { resolvePolicy } from "../../gateway/ratelimit/policy.js";
import { RejectionCache } from "../../gateway/ratelimit/rejection-cache.js";
import { createMetrics } from "../../gateway/observability/metrics.js";
import { Registry } from "prom-client";

const base = resolvePolicy(
  "read",
  "sliding_log",
  "enforce",
  [{ limit: 2, windowS: 60 }],
  "subject",
  false,
  "pro",
  {
    cost: 1,
  },
);
const alice: Override = {
  identity: "sub:alice",
  classes: { read: [{ limit: 9, window_s: 60 }] },
  expires_at: null,
};

describe("Overrides.apply", () => {
  it("keeps everything but the windows: budgets, cost, charge, thresholds and top callers", () => {
    const full = resolvePolicy(
      "read",
      "sliding_log",
      "enforce",
      [{ limit: 2, windowS: 60 }],
      "subject",
      false,
      "pro",
      {
        cost: 3,
        charge: { header: "x-units", max: 10 },
        thresholds: [0.8, 1],
        topCallers: true,
      },
    );
    const o = new Overrides();
    o.set(alice);
    const p = o.apply(full, "sub:alice", new ManualClock(), 0);
    expect(p.windows).toEqual([{ limit: 9, windowS: 60 }]);
    expect(p).toMatchObject({
      budgets: full.budgets,
      cost: 3,
      charge: { header: "x-units", max: 10 },
      thresholds: [0.8, 1],
      topCallers: true,
    });
  });

  it("replaces the windows of the named classes for that identity only", () => {
    const o = new Overrides();
    const clock = new ManualClock();
    expect(o.apply(base, "sub:alice", clock, 0)).toBe(base);
    o.set(alice);
    const p = o.apply(base, "sub:alice", clock, 0);
    expect(p.windows).toEqual([{ limit: 9, windowS: 60 }]);
    expect(p).toMatchObject({
      className: "read",
      algorithm: "sliding_log",
      mode: "enforce",
      plan: "pro",
      cost: 1,
    });
    expect(o.apply(base, "sub:alice", clock, 0)).toBe(p);
    expect(o.apply(base, "sub:bob", clock, 0)).toBe(base);
    const write = resolvePolicy(
      "write",
      "sliding_window",
      "enforce",
      [{ limit: 1, windowS: 1 }],
      "subject",
      false,
    );
    expect(o.apply(write, "sub:alice", clock, 0)).toBe(write);
  });

  it("keeps an unchanged override's policy across a refresh, not a changed one's", () => {
    const o = new Overrides();
    const clock = new ManualClock();
    o.set(alice);
    const p = o.apply(base, "sub:alice", clock, 0);
    o.replace([{ ...alice, classes: { read: [{ limit: 9, window_s: 60 }] } }]);
    expect(o.apply(base, "sub:alice", clock, 0)).toBe(p);
    o.replace([{ ...alice, classes: { read: [{ limit: 10, window_s: 60 }] } }]);
    expect(o.apply(base, "sub:alice", clock, 0).windows[0]!.limit).toBe(10);
    o.replace([]);
    expect(o.apply(base, "sub:alice", clock, 0)).toBe(base);
  });

  it("ends at expires_at", () => {
    const o = new Overrides();
    const clock = new ManualClock(1_700_000_000_000);
    o.set({ ...alice, expires_at: 1_700_000_010 });
    expect(o.apply(base, "sub:alice", clock, 0)).not.toBe(base);
    expect(o.list(clock.nowMs())).toHaveLength(1);
    const later = new ManualClock(1_700_000_010_000);
    expect(o.apply(base, "sub:alice", later, 0)).toBe(base);
    expect(o.get("sub:alice", later.nowMs())).toBeUndefined();
    expect(o.list(later.nowMs())).toEqual([]);
  });
});

describe("RejectionCache.forget", () => {
  it("makes the identity's next call ask the store", async () => {
    const store = new MemoryStore({ clock: new ManualClock() });
    const cache = new RejectionCache({
      inner: store,
      clock: systemClock,
      metrics: createMetrics(new Registry(), "test"),
    });
    const one = resolvePolicy(
      "read",
      "sliding_window",
      "enforce",
      [{ limit: 1, windowS: 60 }],
      "subject",
      false,
    );
    for (const id of ["sub:alice", "sub:bob"]) expect((await cache.consume(id, one)).allowed).toBe(true);
    // Both used their last unit: the cache refuses them without asking the store.
    store.forgetWhere((k) => k === "{sub:alice}:read:60" || k === "{sub:bob}:read:60");
    expect((await cache.consume("sub:alice", one)).allowed).toBe(false);
    cache.forget("sub:alice");
    expect((await cache.consume("sub:alice", one)).allowed).toBe(true);
    expect((await cache.consume("sub:bob", one)).allowed).toBe(false);
    cache.forget(null);
    expect((await cache.consume("sub:bob", one)).allowed).toBe(true);
  });
});
