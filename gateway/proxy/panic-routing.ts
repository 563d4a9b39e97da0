/**
 * Panic routing of one upstream (SPEC §16, Envoy's panic threshold at 0 %: source/common/upstream/
 * load_balancer_impl.cc, `isHostSetInPanic`): while no endpoint is available, calls are spread
 * over all of them, each such pick counted; entering and leaving it are each logged once (`warn`,
 * naming the upstream), not once per call.
 */
import type { Logger } from "pino";

/** Whether an upstream routes in panic, its counter and its two log lines. */
export class PanicRouting {
  /** Routing in panic now (the latest pick found no available endpoint). */
  active = false;

  /**
   * @param panics - `gateway_upstream_panic_total{upstream}`, bound
   */
  constructor(
    private readonly upstream: string,
    private readonly panics: { inc(): void },
    private readonly logger: Logger,
  ) {}

  /** A pick found no available endpoint: counted, and logged when it starts a panic. */
  picked(): void {
    this.panics.inc();
    if (this.active) return;
    this.active = true;
    this.logger.warn(
      { upstream: this.upstream },
      "upstream in panic routing: no endpoint available, calls spread over all of them",
    );
  }

  /** An endpoint is available (a pick found one, or one came back): logged when it ends a panic. */
  ended(): void {
    if (!this.active) return;
    this.active = false;
    this.logger.warn(
      { upstream: this.upstream },
      "upstream left panic routing: an endpoint is available again",
    );
  }
}
