/**
 * One proxied call from its admission to its release (SPEC §17-§18): what `Upstream.admit` hands
 * the core for a call it lets in, counted in the upstream's {@link InFlightLedger} until its one
 * idempotent {@link UpstreamCall.end}, whatever way the call ends (answered, refused by the limiter
 * after admission, failed, cut, or the client gone). undici's `BalancedPool` in miniature: what
 * admits the call also releases it, so the count the limit applies to cannot drift.
 */
import type { Milliseconds } from "../base/clock.js";
import type { Admission } from "./admission.js";
import type { InFlightLedger } from "./in-flight-ledger.js";

/** What admitted a call: its upstream (a reload's successor shares the same ledger). */
export interface CallOwner {
  readonly ledger: InFlightLedger;
  /** Its admission now, or null without a limit. */
  readonly admission: Admission | null;
}

/** A call an upstream admitted. */
export class UpstreamCall {
  private readonly owner: CallOwner;
  /** SPEC §18: `"shadow"` when shadow mode would have shed it (the access line's `shed`), else null. */
  readonly shed: "shadow" | null;
  /** Its upstream has a concurrency limit: its time to the response head is the limit's sample. */
  readonly sampled: boolean;
  private ended = false;

  constructor(owner: CallOwner, shed: "shadow" | null, sampled: boolean) {
    this.owner = owner;
    this.shed = shed;
    this.sampled = sampled;
  }

  /**
   * One time to the response head, for the adaptive limit (SPEC §18); nothing without a limit.
   * @param latencyMs - from the try's start to its head (ms)
   * @param stallMs - the gateway's event-loop stall meanwhile (ms), discounted from it
   */
  sample(latencyMs: Milliseconds, stallMs: Milliseconds): void {
    this.owner.admission?.sample(latencyMs, stallMs);
  }

  /** The call's one release: its admitted count leaves the ledger. Later calls do nothing. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.owner.ledger.callEnded();
  }
}
