/**
 * The limiter seam (SPEC §4): a `Limiter` admits and counts one call against every window of a
 * policy atomically, and reports what the rate-limit headers need. Implementations: the memory
 * store, the Redis store, and the failover wrapper that combines them.
 */
import type { RequestTrace } from "../observability/tracing/request-trace.js";
import type { Period } from "../config/calendar-periods.js";
import type { StoreFailureReason } from "./store-failure.js";

/** A sliding window (SPEC §4): `limit` calls per `windowS` seconds. */
export interface SlidingWindowSpec {
  limit: number;
  /** Window length (s). */
  windowS: number;
  period?: undefined;
  offsetMs?: undefined;
}

/**
 * A calendar window (SPEC §19): `limit` calls per calendar `period`, periods starting at midnight
 * (Mondays, the 1st) of the fixed UTC offset `offsetMs` (`rate_limits.quota_utc_offset`).
 */
export interface CalendarWindowSpec {
  limit: number;
  period: Period;
  /** UTC offset the periods are aligned to (ms east of UTC). */
  offsetMs: number;
  windowS?: undefined;
}

/** One window of a class: sliding or calendar. */
export type WindowSpec = SlidingWindowSpec | CalendarWindowSpec;

/** Sliding-window algorithm of a class (its calendar windows are exact counters either way). */
export type Algorithm = "sliding_window" | "sliding_log";

/**
 * What a store needs of a limit class. Counts are stored per identity, class name, window length
 * (or calendar period) and algorithm ({@link windowKey}), never per plan or limit, so a caller
 * whose limits change keeps what it has spent.
 */
export interface LimitPolicy {
  /** Class name: the `X-RateLimit-Resource` value, the metrics label `class`, part of the key. */
  className: string;
  algorithm: Algorithm;
  /** `shadow`: decide and count, but the pipeline proxies over-limit calls anyway. */
  mode: "enforce" | "shadow";
  windows: readonly WindowSpec[];
}

/**
 * The outcome of one limiter call, for the window closest to exhaustion (or, when rejected, the
 * window that frees capacity last).
 */
export interface Decision {
  allowed: boolean;
  /** Index in `policy.windows` of the reported window. */
  windowIndex: number;
  /** Limit of the reported window (divided by `expected_replicas` while failing open). */
  limit: number;
  /** Calls still allowed in that window after this one (>= 0). */
  remaining: number;
  /** When that window next frees capacity (epoch ms, not rounded). */
  resetAtMs: number;
  /** Limiter time of the decision (epoch ms); Redis TIME for the Redis store. */
  nowMs: number;
  /** True when the decision came from the fallback memory store during a store outage. */
  degraded: boolean;
  /**
   * Redis store only, for a policy with calendar windows: `[index, count, index, count, ...]`, each
   * calendar window's index in `policy.windows` and the calls counted in its current period after
   * this call; what a replica goes on counting from while failing open (SPEC §19).
   */
  calendarCounts?: readonly number[];
}

/** Thrown (as a rejection) by a store that cannot answer; the failover wrapper catches it. */
export class LimitStoreError extends Error {
  /** What failed (`timeout`, `refused`, `auth`, ...): the metric label and the outage log field. */
  readonly reason: StoreFailureReason;

  constructor(message: string, options?: { cause?: unknown; reason?: StoreFailureReason }) {
    super(message, options);
    this.name = "LimitStoreError";
    this.reason = options?.reason ?? "reply";
  }
}

/** A rate-limit store. */
export interface Limiter {
  /**
   * Admits the call if every window of `policy` has room for one more call, counting it in all of
   * them; a rejected call is not counted.
   * @param identityKey - the identity with its kind (`sub:alice`, `client:ci-bot`, `ip:10.0.0.1`;
   *   see `identityKey` in `identity.ts`), without the store prefix
   * @param trace - the request's spans (SPEC §13): a store that makes a network call for this one
   *   traces it as a child span of the request's SERVER span (`ratelimit.redis`); an answer given
   *   without one (the memory store, a local answer of the rejection cache) records none
   * @throws LimitStoreError when the store cannot answer
   */
  consume(identityKey: string, policy: LimitPolicy, trace?: RequestTrace | null): Promise<Decision>;
  /**
   * Reports the state as `consume` would, without counting (`GET /rate_limit`, a CORS preflight,
   * the anonymous-budget check of a token no cache knows).
   * @param trace - as for {@link consume}: a network call is the request's `ratelimit.redis` span
   */
  peek(identityKey: string, policy: LimitPolicy, trace?: RequestTrace | null): Promise<Decision>;
  /** Releases connections and timers. */
  close(): Promise<void>;
}
