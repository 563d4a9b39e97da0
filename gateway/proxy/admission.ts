/**
 * Which calls an upstream lets in (SPEC §17 circuit breaking, SPEC §18 load shedding): its
 * concurrency limit is `max_in_flight`, the adaptive limit, or the smaller of both, and a call of
 * priority p is admitted only while the calls in flight are below `shares[p]` × that limit
 * (without a `load_shedding` block every share is 1). Stripe's "concurrent requests limiter" with
 * its "load shedder" for critical traffic (stripe.com/blog/rate-limiters), per upstream and per
 * process; the limit's algorithm is {@link AdaptiveLimit}.
 */
import type { Counter } from "prom-client";
import type { Clock } from "../base/clock.js";
import type { AdaptiveConcurrencyConfig, Priority } from "../config/shedding-schema.js";
import type { UpstreamConfig } from "../config/upstream-schema.js";
import { AdaptiveLimit } from "./adaptive-limit.js";
import type { InFlightLedger } from "./in-flight-ledger.js";

/** What {@link Admission.admit} decided: let in, refused (503), or let in but counted as shed (shadow mode). */
export type Admitted = "admitted" | "shed" | "shadow";

/**
 * One upstream's admission: exists only when the upstream has a limit. It decides; the upstream's
 * {@link InFlightLedger} counts the calls it lets in (`callsAdmitted`, SPEC §17 "calls in flight").
 */
export class Admission {
  /** The adaptive limit, or null without `adaptive_concurrency`. */
  adaptive: AdaptiveLimit | null;
  private maxInFlight: number;
  private shadow: boolean;
  /** The `adaptive_concurrency` block {@link adaptive} was made from, as JSON ("" for none). */
  private adaptiveSettings: string;
  private readonly overloaded: Readonly<Record<Priority, { inc(): void }>>;
  private readonly clock: Clock;
  private readonly ledger: InFlightLedger;

  /**
   * @param ledger - the upstream's counts in flight (its admitted calls are read, never moved here)
   * @param maxInFlight - `max_in_flight`, or 0 for none
   * @param adaptive - `adaptive_concurrency`, or undefined for none
   * @param clock - the adaptive limit's monotonic time and jitter
   * @param overloaded - `gateway_upstream_overloaded_total`
   */
  constructor(
    upstream: string,
    ledger: InFlightLedger,
    maxInFlight: number,
    adaptive: AdaptiveConcurrencyConfig | undefined,
    clock: Clock,
    overloaded: Counter<"upstream" | "priority">,
  ) {
    this.maxInFlight = maxInFlight;
    this.ledger = ledger;
    this.clock = clock;
    this.adaptive = adaptiveLimitOf(adaptive, clock);
    this.adaptiveSettings = JSON.stringify(adaptive ?? "");
    this.shadow = adaptive?.mode === "shadow";
    const child = (priority: Priority) => overloaded.labels({ upstream, priority });
    this.overloaded = {
      critical: child("critical"),
      default: child("default"),
      sheddable: child("sheddable"),
    };
  }

  /**
   * Applies a reloaded upstream's limits (SPEC §7): the calls in flight stay counted, and the
   * adaptive limit keeps what it learnt unless its settings changed.
   */
  reconfigure(maxInFlight: number, adaptive: AdaptiveConcurrencyConfig | undefined): void {
    this.maxInFlight = maxInFlight;
    const settings = JSON.stringify(adaptive ?? "");
    if (settings !== this.adaptiveSettings) {
      this.adaptive = adaptiveLimitOf(adaptive, this.clock);
      this.adaptiveSettings = settings;
    }
    this.shadow = adaptive?.mode === "shadow";
  }

  /** The concurrency limit: `max_in_flight`, the adaptive limit, or the smaller of both (calls). */
  get limit(): number {
    const a = this.adaptive;
    if (a === null) return this.maxInFlight;
    return this.maxInFlight === 0 ? a.limit : Math.min(this.maxInFlight, a.limit);
  }

  /**
   * Decides on one call of `priority` against the calls admitted now: let in, or refused (counted
   * in `overloaded_total`). In shadow mode only `max_in_flight` refuses; a call the adaptive limit
   * would have shed is let in, counted, and reported as `"shadow"`. The caller counts a call let
   * in in the ledger (`admit` in upstream-call.ts).
   * @param share - the share of the limit calls of `priority` may fill (`load_shedding.shares`)
   */
  admit(priority: Priority, share: number): Admitted {
    const calls = this.ledger.callsAdmitted;
    if (this.shadow) {
      if (this.maxInFlight !== 0 && calls >= share * this.maxInFlight) return this.refuse(priority);
      if (calls < share * this.limit) return "admitted";
      this.overloaded[priority].inc();
      return "shadow";
    }
    if (calls >= share * this.limit) return this.refuse(priority);
    return "admitted";
  }

  /**
   * One call's time to the upstream's response head: the adaptive limit's sample.
   * @param latencyMs - from the try's start to its head (ms)
   * @param stallMs - the gateway's event-loop stall meanwhile (ms), discounted from it
   */
  sample(latencyMs: number, stallMs: number): void {
    this.adaptive?.sample(latencyMs, this.ledger.callsAdmitted, stallMs);
  }

  private refuse(priority: Priority): "shed" {
    this.overloaded[priority].inc();
    return "shed";
  }
}

function adaptiveLimitOf(
  adaptive: AdaptiveConcurrencyConfig | undefined,
  clock: Clock,
): AdaptiveLimit | null {
  if (adaptive === undefined) return null;
  return new AdaptiveLimit({ minLimit: adaptive.min_limit, maxLimit: adaptive.max_limit, clock });
}

/** What an upstream's admission is made with. */
export interface AdmissionDeps {
  upstream: string;
  ledger: InFlightLedger;
  /** The adaptive limit's monotonic time and jitter. */
  clock: Clock;
  /** `gateway_upstream_overloaded_total`. */
  overloaded: Counter<"upstream" | "priority">;
}

/**
 * The admission an upstream configured with `cfg` has: null without `max_in_flight` or
 * `adaptive_concurrency`; else `current` (its calls in flight stay counted; reconfigured when
 * `reconfigure`, at commit), or a new one.
 */
export function admissionFor(
  cfg: UpstreamConfig,
  current: Admission | null,
  deps: AdmissionDeps,
  reconfigure: boolean,
): Admission | null {
  const { max_in_flight: max = 0, adaptive_concurrency: adaptive } = cfg;
  if (max <= 0 && adaptive === undefined) return null;
  if (current === null)
    return new Admission(deps.upstream, deps.ledger, max, adaptive, deps.clock, deps.overloaded);
  if (reconfigure) current.reconfigure(max, adaptive);
  return current;
}
