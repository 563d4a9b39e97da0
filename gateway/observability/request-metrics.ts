/**
 * The request metrics as a finish observer: `gateway_requests_total`,
 * `gateway_request_duration_seconds` and the in-flight gauge (raised by the transport at accept).
 */
import type { FinishObserver, FinishedRequest } from "./finished-request.js";
import type { HotMetrics } from "./hot-metrics.js";
import type { GatewayMetrics } from "./metrics.js";

/** Records each finished request. */
export class RequestMetrics implements FinishObserver {
  constructor(
    private readonly metrics: GatewayMetrics,
    private readonly hot: HotMetrics,
  ) {}

  onFinish(r: FinishedRequest): void {
    this.metrics.inflightNow.value--;
    this.hot.request(r.route?.prefix ?? "none", r.className || "none", r.status, r.durationMs / 1000);
  }
}
