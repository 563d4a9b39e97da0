/**
 * One proxied exchange (Envoy's router filter): the owner of a call from the moment the core
 * decides to proxy until the upstream's answer has been relayed or has failed. It picks the
 * endpoint, counts it in flight, starts and ends the CLIENT span, relays the head (decorated by the
 * core, written by the transport) and the body, tells the upstream how the endpoint did (outlier
 * detection, `gateway_upstream_errors_total`), and resolves to an {@link ExchangeResult}: plain
 * data the core turns into what is still to be written (nothing, a 502/504, or a cut stream).
 *
 * Plain requests go through the endpoint's undici pool (undici 7 handler API,
 * `onRequestStart`/`onResponseStart`/...); WebSocket handshakes through its http-proxy-3 relay
 * (`exchange-upgrade.ts`). Bodies stream with backpressure; a client that goes away aborts the
 * upstream request. undici's header and connect timers tick on a coarse clock, so a 504 or connect
 * 502 fires up to about 1 s after `timeout_ms` / `connect_timeout_ms`.
 */
import type { RequestTrace } from "../observability/tracing/request-trace.js";
import type { ResponseTarget } from "./client-io.js";
import type { ExchangeHooks, ExchangeResult, HeadWriter, PlainRequest } from "./exchange-types.js";
import { PlainExchange } from "./plain-exchange.js";
import type { Upstream } from "./upstream.js";

export type { ExchangeHooks, ExchangeResult, HeadWriter, PlainRequest } from "./exchange-types.js";

/**
 * Runs one plain exchange on `upstream`, streaming both bodies into `res`; failed tries are
 * retried as `request.retry` allows (SPEC §17).
 * @returns the result once the response was relayed, the upstream failed or the client left
 */
export function exchange<C, R extends ResponseTarget>(
  upstream: Upstream,
  request: PlainRequest,
  res: R,
  context: C,
  hooks: ExchangeHooks<C>,
  writer: HeadWriter<R>,
  trace: RequestTrace | null,
): Promise<ExchangeResult> {
  return new PlainExchange(upstream, request, res, context, hooks, writer, trace).start();
}
