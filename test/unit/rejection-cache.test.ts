/**
 * The cache of the store's rejections on injected clocks (a monotonic one here,
 * the store's own ten minutes away), with a memory store
 * standing in for Redis: after a 429 the same answer (Remaining 0, window, limit, Reset) is given
 * without a store call until Reset, `nowMs` on the store's clock; the call at Reset reaches the
 * store; another policy object (a reload, another plan), `mode: shadow` and fail-open decisions
 * are never answered from it; memory is bounded; a refusal by an organisation's budget (SPEC §22)
 * answers that caller only.
 */
import { describe, expect, it } from "vitest";
import { ManualClock, type Clock } from "../../gateway/base/clock.js";
import type { Decision, Limiter, LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { MemoryStore } from "../../gateway/ratelimit/memory-store.js";
import { RejectionCache } from "../../gateway/ratelimit/rejection-cache.js";
import { metricValue, testMetrics } from "../helpers/redis-limiter.js";

const T0 = Date.UTC(2026, 0, 1, 0, 0, 0, 250);

const policyOf = (
  algorithm: LimitPolicy["algorithm"],
  limit: number,
  mode: LimitPolicy["mode"] = "enforce",
): LimitPolicy => ({
  className: "read",
  algorithm,
  mode,
  windows: [
    { limit, windowS: 10 },
    { limit: 1000, windowS: 3600 },
  ],
});

/** A store on its own clock (Redis TIME) that counts the calls reaching it. */
function countingStore(storeClock: ManualClock): Limiter & { calls: number; store: MemoryStore } {
  const store = new MemoryStore({ clock: storeClock });
  return {
    calls: 0,
    store,
    consume(k, p, _t, b) {
      this.calls++;
      return store.consume(k, p, null, b);
    },
    peek(k, p, _t, b) {
      this.calls++;
      return store.peek(k, p, null, b);
    },
    charge(k, p, units, b) {
      this.calls++;
      return store.charge(k, p, units, b);
    },
    close: () => store.close(),
  };
}

/** A clock whose monotonic reading is `local`'s wall reading: it moves only when the test moves it. */
function steppedBy(local: ManualClock): Clock {
  return { nowMs: () => local.nowMs(), monotonicMs: () => local.nowMs(), random: Math.random };
}

/** Local clock and store clock ten minutes apart, moved together. */
function setup(maxEntries?: number) {
  const local = new ManualClock(T0);
  const remote = new ManualClock(T0 + 600_000);
  const inner = countingStore(remote);
  const { metrics, registry } = testMetrics();
  const cache = new RejectionCache({
    inner,
    clock: steppedBy(local),
    metrics,
    ...(maxEntries ? { maxEntries } : {}),
  });
  const advance = (ms: number) => (local.advance(ms), remote.advance(ms));
  return { local, remote, inner, cache, registry, advance };
}

describe.each(["sliding_window", "sliding_log"] as const)("%s", (algorithm) => {
  it("answers an over-limit caller locally with the store's own answer until Reset", async () => {
    const { inner, cache, registry, advance, remote } = setup();
    const p = policyOf(algorithm, 3);
    for (let i = 0; i < 3; i++) expect((await cache.consume("sub:a", p)).allowed).toBe(true);
    // The third call used the last unit (Remaining 0): the fourth is refused without a store call.
    const storeCalls = inner.calls;
    expect(storeCalls).toBe(3);
    const first = await cache.consume("sub:a", p);
    expect(first).toEqual({ ...(await inner.store.peek("sub:a", p)), nowMs: first.nowMs, degraded: false });
    expect(first.allowed).toBe(false);
    for (let step = 0; step < 8; step++) {
      advance(1000);
      const local = await cache.consume("sub:a", p);
      // What the store says now, read without counting (a rejected state reads the same).
      const truth = await inner.store.peek("sub:a", p);
      // The store's clock, as seen from here (the test's store answers at once: no round trip).
      expect(local).toEqual({ ...truth, degraded: false });
      expect(local.nowMs).toBe(remote.nowMs());
    }
    expect(inner.calls).toBe(storeCalls);
    expect(await metricValue(registry, "gateway_ratelimit_local_rejections_total")).toBe(9);
    // At Reset (store clock) the call reaches the store and is admitted.
    advance(first.resetAtMs - remote.nowMs());
    expect((await cache.consume("sub:a", p)).allowed).toBe(true);
    expect(inner.calls).toBe(storeCalls + 1);
  });
});

describe("past Reset", () => {
  it("one call asks the store; the calls arriving meanwhile get its answer", async () => {
    const { inner, cache, advance } = setup();
    const p = policyOf("sliding_log", 3);
    for (let i = 0; i < 3; i++) {
      expect((await cache.consume("sub:a", p)).allowed).toBe(true);
      advance(1000); // calls one second apart: one unit frees at a time
    }
    const refused = await cache.consume("sub:a", p);
    advance(refused.resetAtMs - refused.nowMs + 1);
    const before = inner.calls;
    const burst = await Promise.all(Array.from({ length: 20 }, () => cache.consume("sub:a", p)));
    expect(inner.calls).toBe(before + 1);
    expect(burst.map((d) => d.allowed)).toEqual([true, ...Array(19).fill(false)]);
    // ... each refusal exactly what the store answers after the probe took the freed unit
    const truth = await inner.store.peek("sub:a", p);
    for (const d of burst.slice(1)) expect(d).toEqual({ ...truth, nowMs: d.nowMs, degraded: false });
  });

  it("with a few units free, the waiters ask one at a time until none is left", async () => {
    const { inner, cache, advance } = setup();
    const p = policyOf("sliding_log", 3);
    for (let i = 0; i < 4; i++) await cache.consume("sub:a", p); // three at once, then refused
    advance(10_001); // all three leave together
    const before = inner.calls;
    const burst = await Promise.all(Array.from({ length: 8 }, () => cache.consume("sub:a", p)));
    expect(burst.map((d) => d.allowed)).toEqual([true, true, true, ...Array(5).fill(false)]);
    expect(inner.calls).toBe(before + 3);
  });

  it("with room for every waiter, they ask at once", async () => {
    const { inner, cache, advance } = setup();
    const p = policyOf("sliding_log", 10);
    for (let i = 0; i < 11; i++) await cache.consume("sub:a", p);
    advance(10_001); // all ten leave together
    const before = inner.calls;
    const burst = await Promise.all(Array.from({ length: 5 }, () => cache.consume("sub:a", p)));
    expect(burst.every((d) => d.allowed)).toBe(true);
    expect(inner.calls).toBe(before + 5);
  });

  it("a failed store call forgets the caller, so nobody waits on it", async () => {
    const { inner, cache, advance } = setup();
    const p = policyOf("sliding_log", 1);
    await cache.consume("sub:a", p);
    advance(10_001);
    const consume = inner.consume;
    inner.consume = () => Promise.reject(new Error("down"));
    await expect(cache.consume("sub:a", p)).rejects.toThrow("down");
    inner.consume = consume;
    expect((await cache.consume("sub:a", p)).allowed).toBe(true);
  });
});

/**
 * A memory store on its own clock (`remoteStartMs`) behind a rejection cache on a local monotonic
 * clock, whose every consume takes `replyMs` to come back (both clocks move on by it).
 */
function slowStore(remoteStartMs: number, replyMs: number) {
  const local = new ManualClock(T0);
  const remote = new ManualClock(remoteStartMs);
  const store = new MemoryStore({ clock: remote });
  const slow: Limiter = {
    consume: async (k, p) => {
      const d = await store.consume(k, p);
      local.advance(replyMs);
      remote.advance(replyMs);
      return d;
    },
    peek: (k, p) => store.peek(k, p),
    charge: (k, p, units) => store.charge(k, p, units),
    close: () => store.close(),
  };
  const cache = new RejectionCache({
    inner: slow,
    clock: steppedBy(local),
    metrics: testMetrics().metrics,
  });
  return { local, remote, cache };
}

describe("the store's clock", () => {
  it("is read from the reply and moved on by monotonic time, whatever the local wall clock", async () => {
    // A store 10 min ahead of the local clock, whose reply takes 40 ms to come back (and be read).
    const { remote, cache } = slowStore(T0 + 600_000, 40);
    const p = policyOf("sliding_log", 1);
    const used = await cache.consume("sub:a", p); // the last unit, decided 40 ms ago
    // Behind the store by the reply's 40 ms at most, never ahead of it.
    const d = await cache.consume("sub:a", p);
    expect(d.allowed).toBe(false);
    expect(remote.nowMs() - d.nowMs).toBe(40);
    expect(d.nowMs).toBe(used.nowMs);
  });

  it("stops answering a round trip before the whole second when Reset is that close to it", async () => {
    const { local, remote, cache } = slowStore(Date.UTC(2026, 0, 1, 0, 0, 0, 990), 25); // 10 ms before a second
    const p = policyOf("sliding_log", 1);
    const used = await cache.consume("sub:a", p);
    // Reset is 10 s later at .990, so the header says the next whole second, 10 ms after Reset;
    // the estimate may be 25 ms behind the store (that reply's round trip).
    expect(used.resetAtMs % 1000).toBe(990);
    const headerMs = Math.ceil(used.resetAtMs / 1000) * 1000;
    const to = (t: number) => {
      local.advance(t - remote.nowMs());
      remote.advance(t - remote.nowMs());
    };
    to(used.resetAtMs - 20);
    expect((await cache.consume("sub:a", p)).allowed).toBe(false); // still before Reset: local 429
    to(headerMs); // a client that waited until X-RateLimit-Reset reaches the store and is admitted
    expect((await cache.consume("sub:a", p)).allowed).toBe(true);
  });
});

describe("what is never answered locally", () => {
  it("another policy object of the same class (a reload, another plan) asks the store", async () => {
    const { inner, cache } = setup();
    const p = policyOf("sliding_log", 2);
    for (let i = 0; i < 3; i++) await cache.consume("sub:a", p);
    const before = inner.calls;
    const reloaded = { ...p }; // equal, but another object: compiled by a reload
    expect((await cache.consume("sub:a", reloaded)).allowed).toBe(false);
    expect(inner.calls).toBe(before + 1);
    // ... and from then on the new policy is the one answered locally
    await cache.consume("sub:a", reloaded);
    expect(inner.calls).toBe(before + 1);
    // A bigger plan admits (same counts): the old plan's rejection no longer holds once counted.
    const pro = policyOf("sliding_log", 5);
    expect((await cache.consume("sub:a", pro)).allowed).toBe(true);
    expect((await cache.consume("sub:a", reloaded)).remaining).toBe(0);
    expect(inner.calls).toBe(before + 3);
  });

  it("mode: shadow classes always reach the store", async () => {
    const { inner, cache, registry } = setup();
    const p = policyOf("sliding_window", 1, "shadow");
    for (let i = 0; i < 5; i++) await cache.consume("sub:a", p);
    expect(inner.calls).toBe(5);
    expect(await metricValue(registry, "gateway_ratelimit_local_rejections_total")).toBe(0);
  });

  it("decisions of the fail-open fallback (degraded) are not kept", async () => {
    const local = new ManualClock(T0);
    let calls = 0;
    const degraded: Decision = {
      allowed: false,
      windowIndex: 0,
      limit: 1,
      remaining: 0,
      resetAtMs: T0 + 60_000,
      nowMs: T0,
      degraded: true,
    };
    const inner: Limiter = {
      consume: () => (calls++, Promise.resolve(degraded)),
      peek: () => (calls++, Promise.resolve(degraded)),
      charge: () => (calls++, Promise.resolve(degraded)),
      close: () => Promise.resolve(),
    };
    const cache = new RejectionCache({
      inner,
      clock: steppedBy(local),
      metrics: testMetrics().metrics,
    });
    const p = policyOf("sliding_window", 1);
    for (let i = 0; i < 3; i++) await cache.consume("sub:a", p);
    expect(calls).toBe(3);
  });

  it("keeps at most maxEntries identities, least recently used dropped", async () => {
    const { inner, cache } = setup(2);
    const p = policyOf("sliding_log", 1);
    for (const who of ["a", "b", "c"]) for (let i = 0; i < 2; i++) await cache.consume(`sub:${who}`, p);
    const before = inner.calls;
    await cache.consume("sub:c", p);
    await cache.consume("sub:b", p);
    expect(inner.calls).toBe(before);
    await cache.consume("sub:a", p); // dropped: asked again
    expect(inner.calls).toBe(before + 1);
  });
});

describe("peek", () => {
  it("reads a cached rejection locally, without counting it as a local 429", async () => {
    const { inner, cache, registry } = setup();
    const p = policyOf("sliding_window", 1);
    await cache.consume("ip:10.0.0.1", p);
    const rejected = await cache.consume("ip:10.0.0.1", p);
    const before = inner.calls;
    const peeked = await cache.peek("ip:10.0.0.1", p);
    expect(peeked).toEqual({ ...rejected, nowMs: peeked.nowMs });
    expect(inner.calls).toBe(before);
    // The consume answered locally counts; the peek does not.
    expect(await metricValue(registry, "gateway_ratelimit_local_rejections_total")).toBe(1);
  });
});

describe("budgets (SPEC §22)", () => {
  const orgPolicy: LimitPolicy = {
    className: "read",
    algorithm: "sliding_log",
    mode: "enforce",
    windows: [{ limit: 5, windowS: 10 }],
    budgets: [{ key: "claim:org_id", claim: "org_id", windows: [{ limit: 3, windowS: 10 }] }],
  };
  const acme = ["claim:org_id:acme"];

  it("a refusal by the organisation answers that caller locally, never a colleague, and never admits past it", async () => {
    const { inner, cache, advance } = setup();
    for (let i = 0; i < 3; i++)
      expect((await cache.consume("sub:ann", orgPolicy, null, acme)).allowed).toBe(true);
    // ann's third call used the organisation's last unit: her next is answered locally.
    const before = inner.calls;
    const ann = await cache.consume("sub:ann", orgPolicy, null, acme);
    expect(ann).toMatchObject({ allowed: false, windowIndex: 1, limit: 3 });
    expect(inner.calls).toBe(before);
    // ben has all of his own left: his call goes to the store, which refuses it (no copy of ann's).
    const ben = await cache.consume("sub:ben", orgPolicy, null, acme);
    expect(ben).toMatchObject({ allowed: false, windowIndex: 1 });
    expect(inner.calls).toBe(before + 1);
    // ann without the claim (another budget set) is her own entry: her own window has room.
    expect((await cache.consume("sub:ann", orgPolicy, null, [null])).allowed).toBe(true);
    // Once the organisation's window frees, exactly its limit is admitted again, by the store.
    advance(10_001);
    const after = await Promise.all(
      ["ann", "ben", "cat", "dan"].map((u) => cache.consume(`sub:${u}`, orgPolicy, null, acme)),
    );
    expect(after.filter((d) => d.allowed)).toHaveLength(3);
  });
});
