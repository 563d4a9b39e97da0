/**
 * Passive outlier detection for one upstream (SPEC §16 `outlier_detection`), after Envoy's
 * consecutive-error detector: `DetectorHostMonitorImpl::putHttpResponseCode`, `DetectorImpl::ejectHost`,
 * `checkHostForUneject` and `onIntervalTimer` in source/common/upstream/outlier_detection_impl.cc
 * (envoyproxy/envoy).
 *
 * - `consecutiveFailures` failed calls in a row eject an endpoint; a success resets the count, and
 *   so do reaching the threshold (Envoy resets the counter once it has acted, whether the ejection
 *   was allowed or not) and the end of an ejection.
 * - The k-th ejection in a row lasts `baseEjectionMs` × k, at most {@link MAX_EJECTION_MS}. Envoy
 *   lowers k once per detection interval without an ejection; SPEC §16 says once per
 *   5 × `baseEjectionMs`, counted from the moment the last ejection ended. k is settled lazily,
 *   when the next ejection happens, so no timer runs for it.
 * - An ejection is allowed while ejected endpoints (this one included) are at most
 *   `maxEjectionPercent` of all endpoints, as Envoy computes it, and always when none is ejected
 *   (Envoy's `always_eject_one_host`), except in an upstream of one endpoint, which is never ejected.
 * - Failures reported for an endpoint while it is ejected (calls that were in flight, or panic
 *   routing) are ignored, as Envoy ignores them.
 *
 * Contract with the upstream: the detector does not touch `available`. It calls `onChange(i, true)`
 * from inside the `failure` that ejects, and `onChange(i, false)` when it notices an ejection has
 * ended: in `isEjected(i)` or `refresh()`. The upstream keeps `available = healthy && !ejected` in
 * `onChange`, and calls `refresh()` when `nextUnejectionAt()` comes (one timer per upstream, or its
 * existing periodic timer); nothing here runs per request beyond the counters.
 */
import type { BalancedEndpoint } from "./types.js";
import type { Clock } from "../../base/clock.js";

/** SPEC §16: no ejection lasts longer than this (Envoy's default `max_ejection_time`). */
export const MAX_EJECTION_MS = 300_000;

/** SPEC §16 `outlier_detection`, already validated. */
export interface OutlierSettings {
  /** Consecutive failed calls that eject an endpoint; 0 turns detection off. @default 5 */
  consecutiveFailures: number;
  /** Length of a first ejection. @default 30000 (ms) */
  baseEjectionMs: number;
  /** Most endpoints ejected at once, in percent of the upstream's endpoints. @default 50 */
  maxEjectionPercent: number;
}

/** Ejections of one upstream's endpoints, by index into its endpoint array. */
export class OutlierDetector {
  private readonly count: number;
  private readonly enabled: boolean;
  private readonly failures: Int32Array;
  /** When the current ejection ends (ms, monotonic ms); 0 while not ejected. */
  private readonly ejectedUntil: Float64Array;
  /** Envoy's `ejectTimeBackoff`: k of the last ejection, before the lazy decrease. */
  private readonly backoff: Int32Array;
  /** When the last ejection ended (ms); NaN before the first. */
  private readonly returnedAt: Float64Array;
  private readonly ejections: Float64Array;
  private active = 0;
  /** k beyond which ejections no longer lengthen (base × k already reaches the cap). */
  private readonly maxBackoff: number;

  /**
   * @param endpoints - the upstream's endpoints (only their number is used)
   * @param settings - SPEC §16 `outlier_detection`
   * @param clock - its monotonic time (ejection ends)
   * @param onChange - told when endpoint `index` is ejected (`true`) or returns (`false`)
   */
  constructor(
    endpoints: readonly BalancedEndpoint[],
    private readonly settings: OutlierSettings,
    private readonly clock: Pick<Clock, "monotonicMs">,
    private readonly onChange?: (index: number, ejected: boolean) => void,
  ) {
    const n = endpoints.length;
    this.count = n;
    this.enabled = settings.consecutiveFailures > 0 && n > 1;
    this.failures = new Int32Array(n);
    this.ejectedUntil = new Float64Array(n);
    this.backoff = new Int32Array(n);
    this.returnedAt = new Float64Array(n).fill(Number.NaN);
    this.ejections = new Float64Array(n);
    this.maxBackoff = Math.max(1, Math.ceil(MAX_EJECTION_MS / settings.baseEjectionMs));
  }

  /** A call to endpoint `i` succeeded (any answer but a 502, 503 or 504 from the endpoint). */
  success(i: number): void {
    this.failures[i] = 0;
  }

  /**
   * A call to endpoint `i` failed: connection refused, reset or timed out, or a 502, 503 or 504
   * from the endpoint itself. May eject it, calling `onChange(i, true)` before returning.
   */
  failure(i: number): void {
    if (!this.enabled || this.isEjected(i)) return;
    const failures = this.failures[i]! + 1;
    if (failures < this.settings.consecutiveFailures) {
      this.failures[i] = failures;
      return;
    }
    this.failures[i] = 0;
    this.refresh(); // ejections that have ended no longer count against the percentage
    if (this.active > 0 && (100 * (this.active + 1)) / this.count > this.settings.maxEjectionPercent) return;
    const now = this.clock.monotonicMs();
    const base = this.settings.baseEjectionMs;
    let k = this.backoff[i]!;
    const since = now - this.returnedAt[i]!; // NaN before the first ejection: no decrease
    if (since > 0) k = Math.max(0, k - Math.floor(since / (5 * base)));
    k = Math.min(k + 1, this.maxBackoff);
    this.backoff[i] = k;
    this.ejectedUntil[i] = now + Math.min(base * k, MAX_EJECTION_MS);
    this.ejections[i]!++;
    this.active++;
    this.onChange?.(i, true);
  }

  /**
   * @returns true while endpoint `i` is ejected; an ejection whose time has come ends here
   *   (calling `onChange(i, false)`)
   */
  isEjected(i: number): boolean {
    const until = this.ejectedUntil[i]!;
    if (until === 0) return false;
    if (this.clock.monotonicMs() < until) return true;
    this.end(i, until);
    return false;
  }

  /** Ends every ejection whose time has come, calling `onChange(i, false)` for each. */
  refresh(): void {
    const now = this.clock.monotonicMs();
    for (let i = 0; i < this.count; i++) {
      const until = this.ejectedUntil[i]!;
      if (until !== 0 && now >= until) this.end(i, until);
    }
  }

  /** @returns when the earliest current ejection ends (ms, monotonic ms); Infinity if none */
  nextUnejectionAt(): number {
    let next = Infinity;
    for (let i = 0; i < this.count; i++) {
      const until = this.ejectedUntil[i]!;
      if (until !== 0 && until < next) next = until;
    }
    return next;
  }

  /**
   * Endpoint `i` keeps the state it had as endpoint `i` of `from` (a reload that keeps it, SPEC
   * §7): its ejection and its backoff. No `onChange` is called: the endpoint's flags already say it.
   */
  carry(i: number, from: OutlierDetector): void {
    if (i >= from.count || i >= this.count) return;
    this.failures[i] = from.failures[i]!;
    this.ejectedUntil[i] = from.ejectedUntil[i]!;
    this.backoff[i] = from.backoff[i]!;
    this.returnedAt[i] = from.returnedAt[i]!;
    this.ejections[i] = from.ejections[i]!;
    if (this.ejectedUntil[i] !== 0) this.active++;
  }

  /**
   * Ends endpoint `i`'s ejection now (calling `onChange(i, false)`), as if its time had come: its
   * active health check saw it down and then up again (a restarted instance). Its backoff stays.
   */
  forgive(i: number): void {
    const until = this.ejectedUntil[i]!;
    if (until !== 0) this.end(i, Math.min(until, this.clock.monotonicMs()));
  }

  /** @returns how many times endpoint `i` has been ejected (for `gateway_upstream_ejections_total`) */
  ejectionCount(i: number): number {
    return this.ejections[i]!;
  }

  /** @returns how many endpoints are ejected now (as of the last check) */
  ejectedCount(): number {
    return this.active;
  }

  private end(i: number, until: number): void {
    this.ejectedUntil[i] = 0;
    this.returnedAt[i] = until; // k's decrease counts from when the ejection was due to end
    this.failures[i] = 0;
    this.active--;
    this.onChange?.(i, false);
  }
}
