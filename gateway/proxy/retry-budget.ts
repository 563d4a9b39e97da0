/**
 * One upstream's retry budget (SPEC §17), Envoy's `retry_budget` (api/envoy/config/cluster/v3/
 * circuit_breaker.proto, `RetryBudget`): retries in flight stay at most
 * `max(min_retries, ratio × tries in flight)`, where tries in flight count every attempt, retries
 * included, and a retry is in flight from its decision (its backoff included) to its end. The
 * counts are the upstream's {@link InFlightLedger}; the try whose failure asks for the retry is
 * counted as ended: a failed try has left the ledger, and a try that answered a retryable status
 * (still in the ledger while its head is read) is passed as `ending` and discounted.
 */
import type { Counter } from "prom-client";
import type { UpstreamConfig } from "../config/upstream-schema.js";
import type { InFlightLedger } from "./in-flight-ledger.js";

/** The budget of one upstream. */
export class RetryBudget {
  private ratio: number;
  private minRetries: number;
  private readonly retried: ReturnType<Counter<"upstream" | "result">["labels"]>;
  private readonly exhausted: ReturnType<Counter<"upstream" | "result">["labels"]>;

  /**
   * @param ledger - the upstream's counts in flight (read, and moved for a granted retry)
   * @param retries - `gateway_upstream_retries_total`
   */
  constructor(
    upstream: string,
    cfg: UpstreamConfig,
    private readonly ledger: InFlightLedger,
    retries: Counter<"upstream" | "result">,
  ) {
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
   * Asks for one retry, counting the try whose failure asks as ended. A granted retry is in flight
   * from now ({@link InFlightLedger.retryDecided}) until the ledger hears of its end.
   * @param ending - that try while the ledger still counts it (a retryable status, its answer
   *   not yet given up), or null when it has ended (a connection failure, a reset, a timeout)
   * @returns false when the budget is spent (counted as `budget_exhausted`)
   */
  tryRetry(ending: { readonly retry: boolean } | null): boolean {
    const ledger = this.ledger;
    const tries = ending === null ? ledger.triesDispatched : ledger.triesDispatched - 1;
    const retries = ending?.retry === true ? ledger.retries - 1 : ledger.retries;
    const allowed = Math.max(this.minRetries, this.ratio * tries);
    if (retries >= allowed) {
      this.exhausted.inc();
      return false;
    }
    ledger.retryDecided();
    this.retried.inc();
    return true;
  }
}
