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
 * A budget shared by every caller whose token carries one claim value (SPEC §22): an extra level of
 * windows a call of the class counts in, keyed by `claim:<name>` and the token's value.
 */
export interface BudgetLevel {
  /** `claim:<name>` as configured: the access line's `limited_by`, the status body's `key`. */
  key: string;
  /** The claim's name (`org_id`). */
  claim: string;
  windows: readonly WindowSpec[];
}

/**
 * The budgets one call belongs to (SPEC §22): per entry of `policy.budgets`, the budget's storage
 * identity (`claim:org_id:acme`, see `budgetKeysOf` in `budgets.ts`), or null when the token lacks
 * that claim (the call does not count in that budget).
 */
export type BudgetKeys = readonly (string | null)[];

/** How a store call counts: admit-and-count, read only, or add charged units unconditionally. */
export type CountMode = "count" | "peek" | "charge";

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
  /**
   * Shared budgets counted by the same call (SPEC §22), in configuration order; their windows
   * follow `windows` in the flat window index of a {@link Decision}. @default none
   */
  budgets?: readonly BudgetLevel[];
  /** Units a call spends in every window it counts in (SPEC §22 `cost`). @default 1 */
  cost?: number;
  /**
   * Fractions of a calendar window's limit whose crossing a count or a charge reports (SPEC §21
   * notifications), ascending; absent: none, and the store does no extra work.
   */
  thresholds?: readonly number[];
  /**
   * Keep, per calendar window of the identity's own, the class's top callers of the period
   * (SPEC §21 `GET /usage/top`). @default false
   */
  topCallers?: boolean;
}

/**
 * A threshold crossing reported by a count or a charge (SPEC §21): the window's count went from
 * below `threshold × limit` to at least it, or the call was refused by it (`threshold` 1). Reported
 * once per identity (or budget), class, period and threshold, whichever replica made the call.
 */
export interface Crossing {
  /** The calendar window, a flat index (`flatWindows`: own windows, then budgets'). */
  windowIndex: number;
  /** The fraction crossed, one of `LimitPolicy.thresholds`. */
  threshold: number;
  /** Units counted in the window's current period after the call. */
  used: number;
}

/**
 * The outcome of one limiter call, for the window closest to exhaustion (or, when rejected, the
 * window that frees capacity last).
 */
export interface Decision {
  allowed: boolean;
  /**
   * Index of the reported window in the policy's flat window list: `policy.windows`, then each
   * budget's windows in order (`flatWindows` in `levels.ts`), whether or not the call belongs to
   * every budget.
   */
  windowIndex: number;
  /** Limit of the reported window (divided by `expected_replicas` while failing open). */
  limit: number;
  /** Units still allowed in that window after this call (>= 0; SPEC §22: may be > 0 on a refusal). */
  remaining: number;
  /** When that window next frees capacity (epoch ms, not rounded). */
  resetAtMs: number;
  /** Limiter time of the decision (epoch ms); Redis TIME for the Redis store. */
  nowMs: number;
  /** True when the decision came from the fallback memory store during a store outage. */
  degraded: boolean;
  /**
   * Redis store only, after a count or a charge of a policy with calendar windows: `[index, count,
   * ...]`, each calendar window's index among the call's windows (the identity's own come first, at
   * their `policy.windows` index) and the units counted in its current period after this call; what
   * a replica goes on counting from while failing open (SPEC §19).
   */
  calendarCounts?: readonly number[];
  /** Threshold crossings of this count or charge (SPEC §21); absent when none. */
  crossings?: readonly Crossing[];
  /**
   * A peek's report per budget the call belongs to (SPEC §22, `GET /rate_limit`), in
   * `policy.budgets` order; absent otherwise.
   */
  levels?: readonly LevelStatus[];
}

/** One budget level's window closest to exhaustion, as a peek read it (SPEC §22). */
export interface LevelStatus {
  /** The budget's storage identity, `claim:org_id:acme`. */
  budget: string;
  /** Index of the budget in `policy.budgets`. */
  index: number;
  limit: number;
  /** Units left now. */
  remaining: number;
  resetAtMs: number;
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
   * Admits the call if every window of `policy` (and of every budget in `budgets`) has room for
   * `policy.cost` more units, counting them in all of them; a rejected call is not counted.
   * @param identityKey - the identity with its kind (`sub:alice`, `client:ci-bot`, `ip:10.0.0.1`;
   *   see `identityKey` in `identity.ts`), without the store prefix
   * @param trace - the request's spans (SPEC §13): a store that makes a network call for this one
   *   traces it as a child span of the request's SERVER span (`ratelimit.redis`); an answer given
   *   without one (the memory store, a local answer of the rejection cache) records none
   * @param budgets - the budgets the call belongs to (SPEC §22); null or absent without budgets
   * @throws LimitStoreError when the store cannot answer
   */
  consume(
    identityKey: string,
    policy: LimitPolicy,
    trace?: RequestTrace | null,
    budgets?: BudgetKeys | null,
  ): Promise<Decision>;
  /**
   * Reports the state as `consume` would, without counting (`GET /rate_limit`, a CORS preflight,
   * the anonymous-budget check of a token no cache knows).
   * @param trace - as for {@link consume}: a network call is the request's `ratelimit.redis` span
   */
  peek(
    identityKey: string,
    policy: LimitPolicy,
    trace?: RequestTrace | null,
    budgets?: BudgetKeys | null,
  ): Promise<Decision>;
  /**
   * Adds `units` to every window the call counts in (its identity's and its budgets'), never
   * refused, even past a limit (SPEC §22 `charge`); reports the state after it as `peek` does.
   * @param units - a positive integer
   * @throws LimitStoreError when the store cannot answer
   */
  charge(
    identityKey: string,
    policy: LimitPolicy,
    units: number,
    budgets?: BudgetKeys | null,
  ): Promise<Decision>;
  /** Releases connections and timers. */
  close(): Promise<void>;
}
