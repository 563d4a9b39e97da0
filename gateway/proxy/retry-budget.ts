/**
 * One upstream's retry budget (SPEC §17), Envoy's `retry_budget` (api/envoy/config/cluster/v3/
 * circuit_breaker.proto, `RetryBudget`): retries in flight stay at most
 * `max(min_retries, ratio × tries in flight)`, where tries in flight count every attempt, retries
 * included, and a retry is in flight from its decision (its backoff included) to its end.
 */
import type { Counter } from "prom-client";
import type { UpstreamConfig } from "../config/upstream-schema.js";

/** The budget of one upstream, and the tries and retries it counts. */
export class RetryBudget {
  /** Tries in flight, each retry from the moment it is decided (the budget's base). */
  triesInFlight = 0;
  /** Retries in flight, from their decision (backoff included) to their end. */
  retriesInFlight = 0;
  private ratio: number;
  private minRetries: number;
  private readonly retried: ReturnType<Counter<"upstream" | "result">["labels"]>;
  private readonly exhausted: ReturnType<Counter<"upstream" | "result">["labels"]>;

  /** @param retries - `gateway_upstream_retries_total` */
  constructor(upstream: string, cfg: UpstreamConfig, retries: Counter<"upstream" | "result">) {
    this.ratio = cfg.retry_budget.ratio;
    this.minRetries = cfg.retry_budget.min_retries;
    this.retried = retries.labels({ upstream, result: "retried" });
    this.exhausted = retries.labels({ upstream, result: "budget_exhausted" });
  }

  /** Applies a reloaded `retry_budget` (the counts in flight stay). */
  configure(cfg: UpstreamConfig): void {
    this.ratio = cfg.retry_budget.ratio;
    this.minRetries = cfg.retry_budget.min_retries;
  }

  /**
   * Asks for one retry. A granted retry is in flight (and a try in flight) from now until
   * {@link retryEnded}.
   * @returns false when the budget is spent (counted as `budget_exhausted`)
   */
  tryRetry(): boolean {
    const allowed = Math.max(this.minRetries, this.ratio * this.triesInFlight);
    if (this.retriesInFlight >= allowed) {
      this.exhausted.inc();
      return false;
    }
    this.retriesInFlight++;
    this.retried.inc();
    return true;
  }

  /** A retry {@link tryRetry} granted has ended (answered, failed or given up). */
  retryEnded(): void {
    this.retriesInFlight--;
  }
}
