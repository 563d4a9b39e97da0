/**
 * The configured policy for a shared-store outage (SPEC §4 `failure_mode`, Kong's `fault_tolerant`):
 * wraps the Redis store and a memory store whose limits are divided by `expected_replicas`.
 *
 * - The first failed call opens an outage: logged once at `error`, `storeDegraded` set to 1.
 * - During the outage no request touches Redis, so none waits: `open` answers from the memory store
 *   with `degraded: true`; `closed` rejects with {@link LimitStoreError} (the pipeline answers 503).
 * - A background probe (one real `consume` on a probe key every `probeIntervalMs`, itself bounded
 *   by the command timeout) ends the outage when it succeeds: logged at `warn` with its duration.
 *   A probe rather than letting requests retry: requests never pay the timeout of a hung Redis more
 *   than once per outage, recovery needs no traffic (so `/readyz` recovers in `closed` mode), and
 *   the probe exercises the same script path — writes included — as a real call, not just `PING`.
 *
 * Calls counted in memory during an outage are not copied to Redis: the shared windows resume with
 * what Redis holds.
 */
import type { Logger } from "pino";
import type { GatewayMetrics } from "../observability/metrics.js";
import { LimitStoreError, type Decision, type Limiter, type LimitPolicy } from "./limiter.js";

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
  fallback: Limiter;
  failureMode: "open" | "closed";
  metrics: Pick<GatewayMetrics, "storeErrors" | "storeDuration" | "storeDegraded">;
  logger: Logger;
  /** Time between probes during an outage (ms). @default 1000 */
  probeIntervalMs?: number;
}

/** The failover {@link Limiter}. */
export class FailoverLimiter implements Limiter {
  private readonly primary: Limiter;
  private readonly fallback: Limiter;
  private readonly open: boolean;
  private readonly metrics: FailoverOptions["metrics"];
  private readonly logger: Logger;
  private readonly probeIntervalMs: number;
  /** Pre-bound children: no label hashing on every limiter call. */
  private readonly duration: { observe(seconds: number): void };
  private readonly errors: { inc(): void };
  /** `performance.now()` when the current outage began; undefined while healthy. */
  private outageSince: number | undefined;
  private degradedCalls = 0;
  private probeTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(o: FailoverOptions) {
    this.primary = o.primary;
    this.fallback = o.fallback;
    this.open = o.failureMode === "open";
    this.metrics = o.metrics;
    this.logger = o.logger;
    this.probeIntervalMs = o.probeIntervalMs ?? 1000;
    const labels = { store: "redis" };
    this.duration = o.metrics.storeDuration.labels(labels);
    this.errors = o.metrics.storeErrors.labels(labels);
    this.metrics.storeDegraded.set(0);
  }

  /** True while the shared store answers (or before it has ever failed). */
  get healthy(): boolean {
    return this.outageSince === undefined;
  }

  /** @throws LimitStoreError in `closed` mode while the shared store fails */
  consume(key: string, policy: LimitPolicy): Promise<Decision> {
    return this.decide(key, policy, true);
  }

  /** @throws LimitStoreError in `closed` mode while the shared store fails */
  peek(key: string, policy: LimitPolicy): Promise<Decision> {
    return this.decide(key, policy, false);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.probeTimer);
    await Promise.all([this.primary.close(), this.fallback.close()]);
  }

  private async decide(key: string, policy: LimitPolicy, count: boolean): Promise<Decision> {
    if (this.outageSince !== undefined) return this.local(key, policy, count, undefined);
    const started = performance.now();
    try {
      const d = await (count ? this.primary.consume(key, policy) : this.primary.peek(key, policy));
      this.duration.observe((performance.now() - started) / 1000);
      return d;
    } catch (err) {
      this.duration.observe((performance.now() - started) / 1000);
      this.errors.inc();
      this.beginOutage(err);
      return this.local(key, policy, count, err);
    }
  }

  /** Answers during an outage: from memory (`open`) or by rejecting (`closed`). */
  private async local(key: string, policy: LimitPolicy, count: boolean, cause: unknown): Promise<Decision> {
    if (!this.open) {
      throw cause instanceof LimitStoreError
        ? cause
        : new LimitStoreError("rate-limit store unavailable", { cause });
    }
    this.degradedCalls++;
    const d = await (count ? this.fallback.consume(key, policy) : this.fallback.peek(key, policy));
    return { ...d, degraded: true };
  }

  private beginOutage(err: unknown): void {
    if (this.outageSince !== undefined || this.closed) return;
    this.outageSince = performance.now();
    this.degradedCalls = 0;
    this.metrics.storeDegraded.set(1);
    this.logger.error(
      { err: err instanceof Error ? err.message : String(err), failureMode: this.open ? "open" : "closed" },
      this.open
        ? "rate-limit store unavailable; enforcing per-replica limits from memory until it answers"
        : "rate-limit store unavailable; answering 503 until it answers",
    );
    this.scheduleProbe();
  }

  private scheduleProbe(): void {
    this.probeTimer = setTimeout(() => void this.probe(), this.probeIntervalMs);
    this.probeTimer.unref();
  }

  private async probe(): Promise<void> {
    if (this.closed || this.outageSince === undefined) return;
    const started = performance.now();
    try {
      await this.primary.consume("probe", PROBE_POLICY);
    } catch {
      this.duration.observe((performance.now() - started) / 1000);
      this.errors.inc();
      if (!this.closed) this.scheduleProbe();
      return;
    }
    this.duration.observe((performance.now() - started) / 1000);
    const outageMs = Math.round(performance.now() - this.outageSince);
    this.outageSince = undefined;
    this.metrics.storeDegraded.set(0);
    this.logger.warn(
      { outageMs, degradedCalls: this.degradedCalls },
      "rate-limit store available again; shared windows resumed",
    );
  }
}
