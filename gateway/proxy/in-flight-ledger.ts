/**
 * One upstream's in-flight ledger: every count of "in flight" the proxy keeps for it, each field
 * saying which count it is, each moved only here. Admission and the adaptive limit's sample read
 * {@link InFlightLedger.callsAdmitted} (SPEC §17-§18: the count the concurrency limit applies to,
 * which `gateway_upstream_in_flight` and `GET /upstreams` show); the retry budget reads
 * {@link InFlightLedger.triesDispatched} and {@link InFlightLedger.retries} (SPEC §17, Envoy's
 * `RetryBudget`); the balancer reads each endpoint's own tries (SPEC §16 `least_request`).
 *
 * The ledger belongs to the upstream's name, not to one configuration: a reload that replaces the
 * upstream hands the same ledger to its successor, so the calls of both generations count once.
 */

/** The per-endpoint field the ledger keeps on each endpoint (the balancers read it there). */
export interface EndpointTries {
  /** Tries dispatched to this endpoint and not ended (plain tries and WebSocket handshakes). */
  inFlight: number;
}

/** One upstream's counts in flight in this process. */
export class InFlightLedger {
  /** Calls admitted and not ended: from admission to the call's one end (SPEC §18). */
  callsAdmitted = 0;
  /**
   * Tries dispatched and not ended, summed over the endpoints, plus retries decided and still in
   * their backoff (a retry is in flight from its decision, SPEC §17): the retry budget's base.
   */
  triesDispatched = 0;
  /** Retries decided and not ended, backoff included (SPEC §17). */
  retries = 0;

  /** A call was admitted; {@link callEnded} once when it ends. */
  callAdmitted(): void {
    this.callsAdmitted++;
  }

  /** A call {@link callAdmitted} counted has ended. */
  callEnded(): void {
    this.callsAdmitted--;
  }

  /** A first try (or a handshake) goes to `endpoint` now. */
  tryDispatched(endpoint: EndpointTries): void {
    this.triesDispatched++;
    endpoint.inFlight++;
  }

  /** A retry was decided: in flight from now, its backoff included, until it ends or is dropped. */
  retryDecided(): void {
    this.triesDispatched++;
    this.retries++;
  }

  /** A decided retry leaves its backoff for `endpoint` (counted in the upstream already). */
  retryDispatched(endpoint: EndpointTries): void {
    endpoint.inFlight++;
  }

  /** A decided retry was dropped during its backoff (the client left, the route's deadline passed). */
  retryDropped(): void {
    this.triesDispatched--;
    this.retries--;
  }

  /** A dispatched try to `endpoint` ended (answered, failed or given up); `retry` as it started. */
  tryEnded(endpoint: EndpointTries, retry: boolean): void {
    endpoint.inFlight--;
    this.triesDispatched--;
    if (retry) this.retries--;
  }
}
