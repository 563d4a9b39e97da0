/**
 * What a balancer works on and what it answers (SPEC §16). Kept apart from `balancer.ts` so the
 * algorithms can import these types without an import cycle through the factory.
 */

/** An endpoint as a balancer sees it: mutable state owned by the upstream. */
export interface BalancedEndpoint {
  /** `host:port` as configured: the endpoint's stable id (metrics, logs, consistent hashing). */
  readonly name: string;
  /** Positive integer (SPEC §16 `endpoints[].weight`, default 1). */
  readonly weight: number;
  /** Healthy (active checks) and not ejected (outlier detection); maintained by the upstream. */
  available: boolean;
  /** Requests in flight to this endpoint in this process; maintained by the upstream. */
  inFlight: number;
}

/**
 * Chooses the endpoint for one call. Implementations allocate nothing per pick and keep their state
 * (if any) for the life of the upstream's endpoint array, which they read but never change.
 */
export interface Balancer {
  /**
   * @param key - the hash key (`consistent_hash`); ignored by the other balancers; `undefined` when
   *   the call has none (then `consistent_hash` spreads by round robin)
   * @param panic - true: treat every endpoint as available (SPEC §16 panic routing)
   * @returns the index into the endpoint array of the chosen endpoint; -1 when, without panic, no
   *   endpoint is available (the caller then counts a panic and calls again with `panic` true).
   *   With `panic` true the result is never -1.
   */
  pick(key: string | undefined, panic: boolean): number;
}
