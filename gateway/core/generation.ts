/**
 * One configuration's calls in flight, and its retirement (SPEC §7 "A reload never cuts a call").
 * Envoy drains a replaced listener's connections and nginx's old workers finish their requests
 * after a reload: likewise a replaced configuration is released when its last call ends, never on a
 * timer, so a slow answer, a streamed body or a long poll started before a reload finishes on the
 * configuration it started with, bounded only by its own timeouts.
 */

/** The calls of one configuration: entered when a request's scope opens, left at its one end. */
export class Generation {
  /** Requests started on this configuration and not finished. */
  calls = 0;
  private onIdle: (() => void) | null = null;
  private retired = false;

  /** A request started on this configuration. */
  enter(): void {
    this.calls++;
  }

  /** A request {@link enter} counted has finished; the last one of a retired generation releases it. */
  leave(): void {
    this.calls--;
    if (this.calls === 0 && this.onIdle !== null) {
      const idle = this.onIdle;
      this.onIdle = null;
      idle();
    }
  }

  /**
   * No new request starts on this configuration any more: `onIdle` runs once, now when nothing is
   * in flight, else when the last call ends. Later calls do nothing.
   */
  retire(onIdle: () => void): void {
    if (this.retired) return;
    this.retired = true;
    if (this.calls === 0) onIdle();
    else this.onIdle = onIdle;
  }

  /** {@link retire} was called. */
  get isRetired(): boolean {
    return this.retired;
  }
}
