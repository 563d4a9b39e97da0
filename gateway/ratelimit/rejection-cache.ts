/**
 * Over-limit callers cost no Redis round trip (issue 17, item 2; Envoy's rate-limit service keeps
 * such a local cache). A 429 says when the caller is admitted again (SPEC §3, the Reset rule: with
 * Remaining 0, Reset is the earliest time one more call is admitted), and rejected calls are not
 * counted, so until then the shared store would give every call of that identity in that class the
 * same answer: Remaining 0, the same window, limit and Reset. This wrapper keeps that answer and
 * gives it locally; only `Retry-After` (Reset − now) moves, and it is computed as Redis would,
 * from the store's clock (its `TIME`, carried in {@link Decision.nowMs}) as seen from here.
 *
 * Exactness:
 * - an entry answers only for the very policy object it was decided for: a reload compiles new
 *   policies and a caller whose plan changed gets another one, so both go to the store at once;
 * - a call of the same identity and class admitted by the store (under another plan's policy)
 *   drops the entry; counts of other replicas can only make the store reject for longer, and the
 *   call at the cached Reset goes to the store and gets the real answer;
 * - the store's clock is estimated as its time in the reply plus the monotonic time elapsed since
 *   the call was sent, an upper bound (the store read its clock after the send): an entry expires
 *   at the latest when the store would admit again, whatever this host's wall clock does;
 * - never for `mode: shadow` classes, nor for decisions of the fail-open fallback (`degraded`).
 *
 * Memory is bounded by an LRU of entries (one per identity and class over its limit).
 */
import { LRUCache } from "lru-cache";
import type { Counter } from "prom-client";
import type { GatewayMetrics } from "../observability/metrics.js";
import type { Decision, Limiter, LimitPolicy } from "./limiter.js";

/** What a 429 of the store said, kept until its Reset. */
interface Rejection {
  /** The policy object it was decided for; another object (reload, plan) never matches. */
  readonly policy: LimitPolicy;
  readonly windowIndex: number;
  readonly limit: number;
  /** When one more call is admitted (epoch ms, store clock). */
  readonly resetAtMs: number;
  /** Store time in the reply minus monotonic time when the call was sent (ms). */
  readonly offsetMs: number;
}

/** Options of {@link RejectionCache}. */
export interface RejectionCacheOptions {
  /** The shared store (the failover wrapper around Redis). */
  inner: Limiter;
  /**
   * Monotonic milliseconds (elapsed time only; never the wall clock, which can step).
   * @default performance.now
   */
  monotonicMs?: () => number;
  metrics: Pick<GatewayMetrics, "localRejections">;
  /** Identities × classes over their limit remembered; least recently used are dropped. @default 10000 */
  maxEntries?: number;
}

/** A {@link Limiter} that answers calls known to be over the limit without asking the store. */
export class RejectionCache implements Limiter {
  private readonly inner: Limiter;
  private readonly monotonicMs: () => number;
  private readonly metrics: RejectionCacheOptions["metrics"];
  /** By class name and identity key (`read\nsub:alice`): what the store's keys are made of. */
  private readonly entries: LRUCache<string, Rejection>;
  /** Pre-bound metric children by class name. */
  private readonly counters = new Map<string, Counter.Internal>();

  constructor(o: RejectionCacheOptions) {
    this.inner = o.inner;
    this.monotonicMs = o.monotonicMs ?? (() => performance.now());
    this.metrics = o.metrics;
    this.entries = new LRUCache({ max: o.maxEntries ?? 10_000 });
  }

  /** Answers locally while a rejection of this identity under this policy holds; else the store's answer. */
  consume(identityKey: string, policy: LimitPolicy): Promise<Decision> {
    if (policy.mode === "shadow") return this.inner.consume(identityKey, policy);
    const id = `${policy.className}\n${identityKey}`;
    const local = this.answer(id, policy);
    if (local === null) return this.ask(id, identityKey, policy, true);
    this.counted(policy.className);
    return Promise.resolve(local);
  }

  /** As {@link consume}, without counting: a rejected state reads the same either way. */
  peek(identityKey: string, policy: LimitPolicy): Promise<Decision> {
    if (policy.mode === "shadow") return this.inner.peek(identityKey, policy);
    const id = `${policy.className}\n${identityKey}`;
    const local = this.answer(id, policy);
    return local === null ? this.ask(id, identityKey, policy, false) : Promise.resolve(local);
  }

  close(): Promise<void> {
    this.entries.clear();
    return this.inner.close();
  }

  /** The cached rejection as a decision, or null (none, another policy, or past its Reset). */
  private answer(id: string, policy: LimitPolicy): Decision | null {
    const e = this.entries.get(id);
    if (e === undefined || e.policy !== policy) return null;
    const nowMs = Math.ceil(this.monotonicMs() + e.offsetMs);
    if (nowMs >= e.resetAtMs) {
      this.entries.delete(id);
      return null;
    }
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

  private async ask(id: string, key: string, policy: LimitPolicy, count: boolean): Promise<Decision> {
    const sentMs = this.monotonicMs();
    const d = await (count ? this.inner.consume(key, policy) : this.inner.peek(key, policy));
    if (!d.allowed && !d.degraded) {
      this.entries.set(id, {
        policy,
        windowIndex: d.windowIndex,
        limit: d.limit,
        resetAtMs: d.resetAtMs,
        // +1: the store reports whole milliseconds, rounded down.
        offsetMs: d.nowMs + 1 - sentMs,
      });
    } else if (d.allowed && count) {
      // Counted under another policy of the same identity and class (another plan): that entry's
      // Reset no longer holds.
      this.entries.delete(id);
    }
    return d;
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
