/**
 * Over-limit callers cost no Redis round trip (Envoy's rate-limit service keeps
 * such a local cache). When Remaining is 0 — a 429, or the admitted call that used the last unit —
 * Reset is the earliest time one more call is admitted (SPEC §3, the Reset rule), and rejected
 * calls are not counted, so until then the shared store would answer every call of that identity
 * in that class alike: 429, Remaining 0, the same window, limit and Reset. This wrapper keeps that
 * answer and gives it locally; only `Retry-After` (Reset − now) moves, computed as Redis would,
 * on the store's clock (its `TIME`, carried in {@link Decision.nowMs}) as seen from here.
 *
 * When an entry's Reset has passed, exactly one call asks the store (the probe) and the calls that
 * arrive meanwhile wait for its answer: a caller far over a per-second limit frees one unit every
 * 1/limit seconds, and without this every connection in flight at that moment would ask. If the
 * probe used the freed unit (Remaining 0 again) or was refused, the waiters get the new answer
 * locally, exactly what the store says to a call that comes after the probe's; if more was free
 * but not enough for all of them, they ask one at a time until nothing is left; with room for all,
 * they ask at once. Callers with no entry are never held up.
 *
 * Exactness:
 * - an entry answers only for the very policy object it was decided for: a reload compiles new
 *   policies and a caller whose plan changed gets another one, so both go to the store at once;
 * - a call of the same identity and class admitted with room left (under another plan's policy)
 *   drops the entry; counts of other replicas can only make the store refuse for longer, and the
 *   call at the remembered Reset asks the store and gets the real answer;
 * - the store's clock is estimated as its time in the reply plus the monotonic time elapsed since
 *   the reply was read (so this host's wall clock does not matter): behind the store by the time
 *   the reply waited to be read, at most that call's round trip. An entry therefore ends at Reset,
 *   or earlier by that round trip when Reset lies closer than that to the next whole second: the
 *   `X-RateLimit-Reset` header is Reset rounded up to the second, and a client that waits until
 *   then must reach the store and be admitted. (Estimating from the send instead is never behind
 *   the store, but runs ahead of it by the whole round trip, event-loop lag included: under load,
 *   entries of a per-second limit expired before they were stored.)
 * - budgets (SPEC §22): an entry is kept per identity, class and the budgets the call belongs to,
 *   and a refusal by a budget's window is that caller's entry only: another user of the same
 *   organisation asks the store (and gets its own refusal), never a copy of this one. A refusal
 *   stays true until its Reset whatever others spend (their calls and charges only add units),
 *   and every admission is the store's, so the cache never admits past a shared budget;
 * - never for `mode: shadow` classes; a decision of the fail-open fallback (`degraded`) or a
 *   failed call drops the entry.
 *
 * Memory is bounded by an LRU of entries (one per identity and class at its limit).
 *
 * Tracing (SPEC §13): the request's trace goes to the store only with the calls that ask it, so a
 * local answer records no `ratelimit.redis` span. A call waiting for a probe's answer records none
 * either: it makes no call of its own (the probe's request has the span) and waits one round trip
 * at most.
 */
import { LRUCache } from "lru-cache";
import type { HotCount } from "../observability/hot-families.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import type { RequestTrace } from "../observability/tracing/request-trace.js";
import type { BudgetKeys, Decision, Limiter, LimitPolicy } from "./limiter.js";
import type { Clock } from "../base/clock.js";

/** What the store said when nothing was left, kept until its Reset. */
interface Exhausted {
  /** The policy object it was decided for; another object (reload, plan) never matches. */
  readonly policy: LimitPolicy;
  readonly windowIndex: number;
  readonly limit: number;
  /** When one more call is admitted (epoch ms, store clock). */
  readonly resetAtMs: number;
  /** When the entry stops answering (epoch ms, store clock): Reset, or a little before (above). */
  readonly untilMs: number;
  /** Store time in the reply minus monotonic time when the reply was read (ms). */
  readonly offsetMs: number;
  /** The one call asking the store since Reset passed, or null. */
  probe: Promise<Decision> | null;
  /** Calls waiting for {@link probe}'s answer. */
  waiting: number;
}

/** Options of {@link RejectionCache}. */
export interface RejectionCacheOptions {
  /** The shared store (the failover wrapper around Redis). */
  inner: Limiter;
  /** The gateway's clock: its monotonic reading only (elapsed time; the wall clock can step). */
  clock: Clock;
  metrics: Pick<GatewayMetrics, "localRejections">;
  /** Identities × classes at their limit remembered; least recently used are dropped. @default 10000 */
  maxEntries?: number;
}

/** A {@link Limiter} that answers calls known to be over the limit without asking the store. */
export class RejectionCache implements Limiter {
  private readonly inner: Limiter;
  private readonly clock: Clock;
  private readonly metrics: RejectionCacheOptions["metrics"];
  /**
   * By class name, identity key and budgets (`read\nsub:alice`, `read\nsub:alice\nclaim:org_id:acme`):
   * what the store's keys are made of.
   */
  private readonly entries: LRUCache<string, Exhausted>;
  /** Pre-bound metric children by class name. */
  private readonly counters = new Map<string, HotCount>();

  constructor(o: RejectionCacheOptions) {
    this.inner = o.inner;
    this.clock = o.clock;
    this.metrics = o.metrics;
    this.entries = new LRUCache({ max: o.maxEntries ?? 10_000 });
  }

  /**
   * Answers locally while this identity is known to have nothing left under this policy.
   * @param trace - handed to the store with a call that asks it; a local answer records no span
   * @param budgets - the call's budgets (SPEC §22): part of the entry's identity
   */
  consume(
    identityKey: string,
    policy: LimitPolicy,
    trace: RequestTrace | null = null,
    budgets: BudgetKeys | null = null,
  ): Promise<Decision> {
    if (policy.mode === "shadow") return this.inner.consume(identityKey, policy, trace, budgets);
    // Nothing remembered (the usual state): no entry to look up, its id is made only if needed.
    if (this.entries.size === 0) return this.ask(null, identityKey, policy, true, trace, budgets);
    const id = entryId(identityKey, policy, budgets);
    const e = this.entries.get(id);
    if (e === undefined || e.policy !== policy)
      return this.ask(id, identityKey, policy, true, trace, budgets);
    const local = this.answer(e);
    if (local === null) return this.probe(id, identityKey, policy, trace, budgets);
    this.counted(policy.className);
    return Promise.resolve(local);
  }

  /**
   * As {@link consume}, without counting: an exhausted state reads the same either way. A peek
   * with budgets goes to the store (its per-level report is not remembered).
   */
  peek(
    identityKey: string,
    policy: LimitPolicy,
    trace: RequestTrace | null = null,
    budgets: BudgetKeys | null = null,
  ): Promise<Decision> {
    // With budgets a peek reports every level (GET /rate_limit): the store's answer, always.
    if (policy.mode === "shadow" || budgets !== null)
      return this.inner.peek(identityKey, policy, trace, budgets);
    if (this.entries.size === 0) return this.ask(null, identityKey, policy, false, trace, budgets);
    const id = entryId(identityKey, policy, budgets);
    const e = this.entries.get(id);
    const local = e === undefined || e.policy !== policy ? null : this.answer(e);
    return local === null ? this.ask(id, identityKey, policy, false, trace, budgets) : Promise.resolve(local);
  }

  /**
   * Always the store's (SPEC §22): a charge only adds units, so a remembered refusal stays true
   * and nothing is dropped.
   */
  charge(
    identityKey: string,
    policy: LimitPolicy,
    units: number,
    budgets: BudgetKeys | null = null,
  ): Promise<Decision> {
    return this.inner.charge(identityKey, policy, units, budgets);
  }

  /**
   * Drops what is remembered of `identity` (its own entries and those naming it as a budget), or
   * everything with null: its counts were reset or its limits overridden (SPEC §21), so its next
   * call must ask the store. Walks the entries: for admin changes, never on the request path.
   */
  forget(identity: string | null): void {
    if (identity === null) return this.entries.clear();
    const stale: string[] = [];
    for (const id of this.entries.keys()) {
      const parts = id.split("\n");
      if (parts.indexOf(identity, 1) > 0) stale.push(id);
    }
    for (const id of stale) this.entries.delete(id);
  }

  close(): Promise<void> {
    this.entries.clear();
    return this.inner.close();
  }

  /** The remembered answer as a decision at this moment, or null once its Reset has passed. */
  private answer(e: Exhausted): Decision | null {
    const nowMs = Math.floor(this.clock.monotonicMs() + e.offsetMs);
    if (nowMs >= e.untilMs) return null;
    return {
      allowed: false,
      windowIndex: e.windowIndex,
      limit: e.limit,
      remaining: 0,
      resetAtMs: e.resetAtMs,
      nowMs,
      degraded: false,
    };
  }

  /** Past Reset: one call asks the store, the others wait for its answer and look again. */
  private async probe(
    id: string,
    key: string,
    policy: LimitPolicy,
    trace: RequestTrace | null,
    budgets: BudgetKeys | null,
  ): Promise<Decision> {
    for (;;) {
      const e = this.entries.get(id);
      if (e === undefined || e.policy !== policy) return this.ask(id, key, policy, true, trace, budgets);
      const local = this.answer(e);
      if (local !== null) {
        this.counted(policy.className);
        return local;
      }
      if (e.probe === null) {
        const asked = this.ask(id, key, policy, true, trace, budgets);
        e.probe = asked;
        let d: Decision;
        try {
          d = await asked;
        } finally {
          e.probe = null;
        }
        // More than one unit was free, but fewer than the calls waiting: they keep asking one at
        // a time (each admitted in turn) until none is left. With room for all, they go at once.
        if (d.allowed && !d.degraded && d.remaining < e.waiting && !this.entries.has(id))
          this.entries.set(id, e);
        return d;
      }
      e.waiting++;
      try {
        await e.probe.catch(() => undefined);
      } finally {
        e.waiting--;
      }
    }
  }

  /** @param id - the entry's id ({@link entryId}), or null: made here when an entry is touched */
  private async ask(
    id: string | null,
    key: string,
    policy: LimitPolicy,
    count: boolean,
    trace: RequestTrace | null,
    budgets: BudgetKeys | null,
  ): Promise<Decision> {
    const sentMs = this.clock.monotonicMs();
    let d: Decision;
    try {
      d = await (count
        ? this.inner.consume(key, policy, trace, budgets)
        : this.inner.peek(key, policy, trace, budgets));
    } catch (err) {
      this.drop(id, key, policy, budgets);
      throw err;
    }
    if (d.degraded) {
      this.drop(id, key, policy, budgets);
    } else if (!d.allowed || (count && d.remaining === 0)) {
      // A refusal, or the call that used the last unit: the next call is refused until Reset, in
      // the window this decision reports (the one with nothing left that frees last).
      const readMs = this.clock.monotonicMs();
      const headerMs = Math.ceil(d.resetAtMs / 1000) * 1000; // X-RateLimit-Reset
      this.entries.set(id ?? entryId(key, policy, budgets), {
        policy,
        windowIndex: d.windowIndex,
        limit: d.limit,
        resetAtMs: d.resetAtMs,
        untilMs: Math.min(d.resetAtMs, headerMs - Math.ceil(readMs - sentMs)),
        offsetMs: d.nowMs - readMs,
        probe: null,
        waiting: 0,
      });
    } else if (count) {
      // Room left (under this or another plan's policy): whatever was remembered no longer holds.
      this.drop(id, key, policy, budgets);
    }
    return d;
  }

  /** Forgets the entry, if any; its id is made only when something is remembered at all. */
  private drop(id: string | null, key: string, policy: LimitPolicy, budgets: BudgetKeys | null): void {
    if (this.entries.size !== 0) this.entries.delete(id ?? entryId(key, policy, budgets));
  }

  private counted(className: string): void {
    let c = this.counters.get(className);
    if (c === undefined) {
      c = this.metrics.localRejections.labels({ class: className });
      this.counters.set(className, c);
    }
    c.inc();
  }
}

/** The entry of an identity in a class, and in the budgets it belongs to (SPEC §22). */
function entryId(identityKey: string, policy: LimitPolicy, budgets: BudgetKeys | null): string {
  const id = `${policy.className}\n${identityKey}`;
  return budgets === null ? id : `${id}\n${budgets.join("\n")}`;
}
