/**
 * One endpoint's active health state (SPEC §16 `health_check`): it starts healthy, becomes
 * unhealthy after `unhealthyThreshold` consecutive failing probes and healthy again after
 * `healthyThreshold` consecutive passing ones, counted as Envoy's active health-check session
 * counts them (`handleSuccess` and `setUnhealthy` in
 * source/extensions/health_checkers/common/health_checker_base_impl.cc, envoyproxy/envoy: a pass
 * clears the failure streak and a failure the pass streak). Envoy starts a host unhealthy and lets
 * its first passing probe admit it; SPEC §16 starts endpoints available, so this starts healthy.
 * Pure: the prober feeds it results and acts on the changes it reports.
 */

/** SPEC §16 `health_check` thresholds, already validated (positive integers). */
export interface HealthThresholds {
  /** Consecutive passing probes that bring an unhealthy endpoint back. @default 2 */
  healthyThreshold: number;
  /** Consecutive failing probes that take a healthy endpoint out. @default 3 */
  unhealthyThreshold: number;
}

/** Consecutive pass and fail counts of one endpoint, and whether it is healthy. */
export class HealthState {
  private isHealthy: boolean;
  /** Consecutive results that contradict the current state (passes while unhealthy, fails while healthy). */
  private streak = 0;

  /**
   * @param healthy - the state to start in: true for a new endpoint; what the previous probes found
   *   when a reloaded configuration probes it again
   */
  constructor(
    private readonly thresholds: HealthThresholds,
    healthy = true,
  ) {
    this.isHealthy = healthy;
  }

  /** true until `unhealthyThreshold` failures in a row, then false until `healthyThreshold` passes in a row. */
  get healthy(): boolean {
    return this.isHealthy;
  }

  /**
   * Records a passing probe (a 2xx or 3xx answer within `timeout_ms`).
   * @returns true when this probe made the endpoint healthy again
   */
  pass(): boolean {
    if (this.isHealthy) {
      this.streak = 0;
      return false;
    }
    if (++this.streak < this.thresholds.healthyThreshold) return false;
    this.isHealthy = true;
    this.streak = 0;
    return true;
  }

  /**
   * Records a failing probe (any other answer, an error or no answer within `timeout_ms`).
   * @returns true when this probe made the endpoint unhealthy
   */
  fail(): boolean {
    if (!this.isHealthy) {
      this.streak = 0;
      return false;
    }
    if (++this.streak < this.thresholds.unhealthyThreshold) return false;
    this.isHealthy = false;
    this.streak = 0;
    return true;
  }
}
