/**
 * The configured policy for a shared-store outage (SPEC §4 `failure_mode`, Kong's `fault_tolerant`):
 * wraps the Redis store and a memory store whose limits are divided by `expected_replicas`.
 *
 * - A failed call is answered locally (`open`: from the memory store with `degraded: true`;
 *   `closed`: {@link LimitStoreError}, the pipeline answers 503), counted in
 *   `gateway_ratelimit_store_errors_total{reason}`, and opens an outage. Failures already mean
 *   that the store does not answer (SPEC §4: "failing open is for a store that does not answer,
 *   never for a gateway that is busy"): the connection itself failed (refused, DNS, TLS,
 *   authentication, database, closed), Redis answered with an error, or a timeout, which the
 *   store reports only after a late reply was followed by a command timeout in which Redis sent
 *   nothing at all (the rule and its reasons: `reply-watch.ts`). A slow reply is waited for.
 * - An outage is logged once at `error` with its `reason` and the underlying message
 *   (`connect ECONNREFUSED ...`, `WRONGPASS ...`, `no reply within 100 ms ...`), and
 *   `storeDegraded` set to 1. During it no request touches Redis, so none waits.
 * - A background probe (one real `consume` on a probe key every `probeIntervalMs`, itself bounded
 *   by the command timeout) ends the outage when it succeeds: logged at `warn` with its duration.
 *   A probe rather than letting requests retry: requests never pay the timeout of a hung Redis more
 *   than once per outage, recovery needs no traffic (so `/readyz` recovers in
 *   `closed` mode), and the probe exercises the same script path — writes included — as a real
 *   call, not just `PING`.
 * - Outside an outage nothing waits for traffic either (SPEC §8: `/readyz` follows Redis "whether
 *   or not any request was made"): {@link healthy} reads the connection's state, so a closed
 *   connection shows at once, and an interval in which no call answered ends with a `ping`, so a
 *   hung Redis (connection open, nothing answering) opens the outage within one interval plus two
 *   command timeouts. Under traffic the calls themselves are the check and no ping is sent.
 *
 * Calls counted in memory during an outage are not copied to Redis: the shared windows resume with
 * what Redis holds. A spent quota stays spent (SPEC §19): a calendar window's count in memory starts
 * from the last count Redis gave this replica for the caller in the current period
 * (`spent-quotas.ts`), so a caller seen over a monthly limit stays refused until the month ends.
 */
import type { Logger } from "pino";
import { systemClock, type Clock } from "../base/clock.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import type { RequestTrace } from "../observability/tracing/request-trace.js";
import type { BudgetKeys, CountMode, Decision, Limiter, LimitPolicy } from "./limiter.js";
import { LimitStoreError } from "./limiter.js";
import type { MemoryStore } from "./memory-store.js";
import { SpentQuotas } from "./spent-quotas.js";
import type { StoreFailureReason } from "./store-failure.js";

/** The policy the probe consumes against: one tiny key that expires after 2 s. */
const PROBE_POLICY: LimitPolicy = {
  className: "probe",
  algorithm: "sliding_window",
  mode: "enforce",
  windows: [{ limit: 1_000_000_000, windowS: 1 }],
};

/** Options of {@link FailoverLimiter}. */
export interface FailoverOptions {
  /** The shared store (Redis). */
  primary: Limiter;
  /** The local store used while failing open; built with `limitDivisor: expected_replicas`. */
  fallback: MemoryStore;
  /**
   * The calendar counts seen in the shared store's replies, from which the fallback counts on
   * (SPEC §19); built with the fallback's `maxKeys` and `limitDivisor`. @default a new one
   */
  spentQuotas?: SpentQuotas;
  failureMode: "open" | "closed";
  /** Times calls and outages (`monotonicMs`); the system clock by default. */
  clock?: Clock;
  metrics: Pick<GatewayMetrics, "storeErrors" | "storeDuration" | "storeDegraded">;
  logger: Logger;
  /** Time between probes during an outage, and between idle checks outside one (ms). @default 1000 */
  probeIntervalMs?: number;
  /**
   * The shared store's connection state (ioredis: `status === "ready"`), read by {@link
   * FailoverLimiter.healthy}. @default () => true
   */
  connected?: () => boolean;
  /**
   * A cheap round trip (ioredis: `PING`, bounded by the command timeout) sent after an interval in
   * which no call answered; a failure opens the outage. @default none: outages start with a call
   */
  ping?: () => Promise<unknown>;
}

/** The failover {@link Limiter}. */
export class FailoverLimiter implements Limiter {
  private readonly primary: Limiter;
  private readonly fallback: MemoryStore;
  private readonly spent: SpentQuotas;
  private readonly open: boolean;
  private readonly metrics: FailoverOptions["metrics"];
  private readonly logger: Logger;
  private readonly probeIntervalMs: number;
  private readonly connected: () => boolean;
  private readonly ping: (() => Promise<unknown>) | undefined;
  /** Pre-bound child: no label hashing on every limiter call. */
  private readonly duration: { observe(seconds: number): void };
  /** The clock's monotonic reading when the current outage began; undefined while healthy. */
  private outageSince: number | undefined;
  private degradedCalls = 0;
  /** A call answered since the last tick: the store is known to work, no ping needed. */
  private answered = false;
  private probeTimer: NodeJS.Timeout | undefined;
  private closed = false;

  private readonly clock: Clock;

  constructor(o: FailoverOptions) {
    this.clock = o.clock ?? systemClock;
    this.primary = o.primary;
    this.fallback = o.fallback;
    this.spent = o.spentQuotas ?? new SpentQuotas();
    this.open = o.failureMode === "open";
    this.metrics = o.metrics;
    this.logger = o.logger;
    this.probeIntervalMs = o.probeIntervalMs ?? 1000;
    this.connected = o.connected ?? (() => true);
    this.ping = o.ping;
    this.duration = o.metrics.storeDuration.labels({ store: "redis" });
    this.metrics.storeDegraded.set(0);
    this.schedule();
  }

  /** True while the shared store answers: connected, and no outage open. */
  get healthy(): boolean {
    return this.outageSince === undefined && this.connected();
  }

  /**
   * @param trace - passed to the shared store (its call's span); an answer from the fallback
   *   makes no network call and records no span
   * @param budgets - the call's budgets (SPEC §22), counted by the fallback too
   * @throws LimitStoreError in `closed` mode while the shared store fails
   */
  consume(
    key: string,
    policy: LimitPolicy,
    trace: RequestTrace | null = null,
    budgets: BudgetKeys | null = null,
  ): Promise<Decision> {
    return this.decide(key, policy, "count", trace, budgets, 0);
  }

  /**
   * @param trace - as for {@link consume}
   * @throws LimitStoreError in `closed` mode while the shared store fails
   */
  peek(
    key: string,
    policy: LimitPolicy,
    trace: RequestTrace | null = null,
    budgets: BudgetKeys | null = null,
  ): Promise<Decision> {
    return this.decide(key, policy, "peek", trace, budgets, 0);
  }

  /**
   * A charge (SPEC §22), in memory while failing open, as calls are.
   * @throws LimitStoreError in `closed` mode while the shared store fails
   */
  charge(
    key: string,
    policy: LimitPolicy,
    units: number,
    budgets: BudgetKeys | null = null,
  ): Promise<Decision> {
    return this.decide(key, policy, "charge", null, budgets, units);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.probeTimer);
    await Promise.all([this.primary.close(), this.fallback.close()]);
  }

  private async decide(
    key: string,
    policy: LimitPolicy,
    mode: CountMode,
    trace: RequestTrace | null,
    budgets: BudgetKeys | null,
    units: number,
  ): Promise<Decision> {
    if (this.outageSince !== undefined) return this.local(key, policy, mode, budgets, units, undefined);
    const started = this.clock.monotonicMs();
    try {
      const d = await call(this.primary, key, policy, mode, trace, budgets, units);
      this.duration.observe((this.clock.monotonicMs() - started) / 1000);
      this.answered = true;
      this.spent.record(key, policy, d);
      return d;
    } catch (err) {
      this.duration.observe((this.clock.monotonicMs() - started) / 1000);
      this.failed(err);
      return this.local(key, policy, mode, budgets, units, err);
    }
  }

  /** Answers during an outage: from memory (`open`) or by rejecting (`closed`). */
  private async local(
    key: string,
    policy: LimitPolicy,
    mode: CountMode,
    budgets: BudgetKeys | null,
    units: number,
    cause: unknown,
  ): Promise<Decision> {
    if (!this.open) {
      throw cause instanceof LimitStoreError
        ? cause
        : new LimitStoreError("rate-limit store unavailable", { cause });
    }
    this.degradedCalls++;
    this.spent.seed(key, policy, budgets, this.fallback, this.clock.nowMs());
    const d = await call(this.fallback, key, policy, mode, null, budgets, units);
    return { ...d, degraded: true };
  }

  /** Counts a failure and opens the outage (once). */
  private failed(err: unknown): void {
    const reason: StoreFailureReason = err instanceof LimitStoreError ? err.reason : "reply";
    this.metrics.storeErrors.inc({ store: "redis", reason });
    if (this.outageSince !== undefined || this.closed) return;
    this.outageSince = this.clock.monotonicMs();
    this.degradedCalls = 0;
    this.metrics.storeDegraded.set(1);
    this.logger.error(
      {
        reason,
        err: err instanceof Error ? err.message : String(err),
        failureMode: this.open ? "open" : "closed",
      },
      this.open
        ? "rate-limit store unavailable; enforcing per-replica limits from memory until it answers"
        : "rate-limit store unavailable; answering 503 until it answers",
    );
  }

  private schedule(): void {
    this.probeTimer = setTimeout(this.tick, this.probeIntervalMs);
    this.probeTimer.unref();
  }

  /** Every `probeIntervalMs`: the probe during an outage, the idle check outside one. */
  private readonly tick = (): void => {
    if (this.closed) return;
    void (this.outageSince === undefined ? this.watch() : this.probe()).then(() => {
      if (!this.closed) this.schedule();
    });
  };

  /** Pings the store when no call answered in the last interval or the connection is down. */
  private async watch(): Promise<void> {
    const answered = this.answered;
    this.answered = false;
    if (this.ping === undefined || (answered && this.connected())) return;
    try {
      await this.ping();
    } catch (err) {
      if (!this.closed) this.failed(err);
    }
  }

  private async probe(): Promise<void> {
    const started = this.clock.monotonicMs();
    try {
      await this.primary.consume("probe", PROBE_POLICY);
    } catch (err) {
      this.duration.observe((this.clock.monotonicMs() - started) / 1000);
      const reason = err instanceof LimitStoreError ? err.reason : "reply";
      this.metrics.storeErrors.inc({ store: "redis", reason });
      return;
    }
    this.duration.observe((this.clock.monotonicMs() - started) / 1000);
    if (this.closed || this.outageSince === undefined) return;
    const outageMs = Math.round(this.clock.monotonicMs() - this.outageSince);
    this.outageSince = undefined;
    this.metrics.storeDegraded.set(0);
    this.logger.warn(
      { outageMs, degradedCalls: this.degradedCalls },
      "rate-limit store available again; shared windows resumed",
    );
  }
}

/** One store call of `mode`. */
function call(
  store: Limiter,
  key: string,
  policy: LimitPolicy,
  mode: CountMode,
  trace: RequestTrace | null,
  budgets: BudgetKeys | null,
  units: number,
): Promise<Decision> {
  if (mode === "count") return store.consume(key, policy, trace, budgets);
  if (mode === "peek") return store.peek(key, policy, trace, budgets);
  return store.charge(key, policy, units, budgets);
}
