/**
 * The core's proxy step (SPEC §1 step 8-9, §16): it runs the call its upstream admitted
 * (`proxy/upstream-call.ts`) and maps its result to what the transport still has to write —
 * nothing (the answer was relayed), the catalogue's 502/504 (SPEC §2), or a cut stream when the
 * upstream failed mid-body. This is the one place that chooses between 502 and 504; the exchange
 * owns the metric of the failure and the CLIENT span, and calls {@link ProxyStep} synchronously
 * (its {@link ExchangeHooks}) to time and decorate the head. It writes no byte: the transport
 * writes the head, the body and a failed handshake's answer.
 */
import type { Clock } from "../base/clock.js";
import type { LoopStall } from "../base/loop-stall.js";
import { ERROR_CATALOG, type ErrorCode } from "../base/error-catalog.js";
import type { HeaderMap } from "../base/request-facts.js";
import type { HotMetrics } from "../observability/hot-metrics.js";
import type { UpstreamErrorReason } from "../base/results.js";
import type { ProxyOutcome } from "./outcome.js";
import type { Endpoint } from "../proxy/endpoint.js";
import type { ExchangeHooks, ExchangeResult, HandshakeWriter, HeadWriter } from "../proxy/exchange-types.js";
import type { UpgradeRequest } from "../proxy/exchange-upgrade.js";
import { stripHopByHop } from "../proxy/forwarded-headers.js";
import type { ProxyRequest, ResponseTarget } from "../proxy/client-io.js";
import { addGatewayFields, errorResponse, type GatewayResponse } from "./responses.js";
import type { RequestScope } from "./scope.js";
import { chargedUnits } from "../ratelimit/charge.js";
import { rateLimitHeaders } from "../ratelimit/headers.js";

/** The transport destroys the client's stream: the upstream failed after the head went out. */
export const CUT = "cut" as const;

/** What is left to write after an exchange: nothing, a gateway response, or {@link CUT}. */
export type ProxyAnswer = GatewayResponse | typeof CUT | null;

/** How a proxied call's exchange ended, as the core reads it. */
export type ProxyResult = ExchangeResult<RequestScope>;

const NOTHING: Promise<ProxyResult | null> = Promise.resolve(null);

/** The catalogue code of an upstream failure: 504 for a timeout, else 502 (SPEC §2). */
export function upstreamErrorCode(reason: UpstreamErrorReason): ErrorCode {
  return reason === "timeout" ? "gateway_timeout" : "bad_gateway";
}

/** The proxy step of one gateway's core. */
export class ProxyStep implements ExchangeHooks<RequestScope> {
  constructor(
    private readonly clock: Clock,
    private readonly hot: HotMetrics,
    /** The gateway's event-loop stall, discounted from an admitted call's latency (SPEC §18). */
    private readonly loop: LoopStall,
  ) {}

  /**
   * Proxies a plain request and streams the answer into `res`.
   * @param body - the client's request (its body streams upstream when `hasBody`)
   * @param writer - the transport, which writes the decorated head on `res`
   * @returns how the exchange ended (null: nothing was sent); {@link answer} says what is left
   */
  plain<R extends ResponseTarget>(
    scope: RequestScope,
    outcome: ProxyOutcome,
    body: ProxyRequest,
    hasBody: boolean,
    res: R,
    writer: HeadWriter<R>,
  ): Promise<ProxyResult | null> {
    // The client went away while the core authenticated and counted the call (a reset stream, a
    // closed connection): nothing is sent upstream for it.
    if (scope.finished) return NOTHING;
    const route = scope.route!;
    return scope.call!.plain(
      scope.method,
      outcome,
      body,
      hasBody,
      route,
      res,
      scope,
      this,
      writer,
      scope.trace,
    );
  }

  /**
   * Proxies a WebSocket handshake; resolves once the upstream answered or failed (a failure before
   * any answer was then written by `writer`, which finishes the scope).
   */
  async upgrade(
    scope: RequestScope,
    outcome: ProxyOutcome,
    request: UpgradeRequest,
    writer: HandshakeWriter<RequestScope>,
  ): Promise<void> {
    if (scope.finished) return;
    const result = await scope.call!.upgrade(request, outcome.path, scope, this, writer, scope.trace);
    if (result.status !== 0) scope.finish(result.status);
  }

  /**
   * {@link ExchangeHooks}: the access line names the endpoint of the latest attempt; the first
   * one starts the upstream time (to the head, over every try) and, for a call its upstream's
   * limit samples, the event-loop stall reading discounted from it.
   */
  attemptStarted(scope: RequestScope, endpoint: Endpoint): void {
    scope.endpoint = endpoint;
    if (scope.attempts++ === 0) {
      scope.upstreamStartMs = this.clock.monotonicMs();
      if (scope.call!.sampled) scope.upstreamStartStallMs = this.loop.totalMs();
    }
  }

  /**
   * {@link ExchangeHooks}: the upstream's head (SPEC §3, §6), in place: timed, hop-by-hop fields
   * removed (a 101 keeps `Connection: Upgrade`; `Transfer-Encoding` too: the transport re-frames
   * the body), and the gateway's fields written over the upstream's. In a class with a `charge`
   * (SPEC §22), the charge header is removed and its units counted first (one more store call,
   * only for answers that carry units): the head then waits, and its headers show the charge.
   */
  upstreamHead(
    scope: RequestScope,
    headers: HeaderMap,
    _endpoint: Endpoint,
    upgraded: boolean,
    canWait: boolean,
  ): Promise<void> | null {
    scope.upstreamMs = this.clock.monotonicMs() - scope.upstreamStartMs;
    this.hot.upstream(scope.route!.upstream, scope.upstreamMs / 1000);
    const call = scope.call!;
    if (call.sampled) call.sample(scope.upstreamMs, this.loop.totalMs() - scope.upstreamStartStallMs);
    stripHopByHop(headers, upgraded);
    const charge = scope.policy?.charge;
    if (charge !== null && charge !== undefined) {
      let units = chargedUnits(headers[charge.header], charge.max);
      delete headers[charge.header];
      // A WebSocket handshake's answer cannot wait: the header is dropped, nothing charged.
      if (!canWait) units = 0;
      if (units === null) this.hot.chargeInvalid(scope.className);
      else if (units > 0) return this.charge(scope, headers, units);
    }
    addGatewayFields(headers, scope, this.clock.nowMs(), true);
    return null;
  }

  /**
   * Counts an answer's charge (never refused, SPEC §22) and decorates the head with the state
   * after it. A store that fails leaves the call's own decision on the head.
   */
  private async charge(scope: RequestScope, headers: HeaderMap, units: number): Promise<void> {
    const policy = scope.policy!;
    try {
      const limiter = scope.runtime.limiter.limiter;
      const d = await limiter.charge(scope.identityKey, policy, units, scope.budgets);
      this.hot.unitsSpent(policy.className, "charge", units);
      if (d.crossings !== undefined)
        scope.runtime.notifier?.notify(scope.identityKey, policy, scope.budgets, d);
      scope.decision = d;
      scope.headers = rateLimitHeaders(d, policy, scope.budgets);
    } catch {
      // closed mode and Redis down: nothing charged, the head keeps the call's decision
    }
    addGatewayFields(headers, scope, this.clock.nowMs(), true);
  }

  /**
   * The one mapping of an exchange's end to what is still to be written: nothing, the catalogue's
   * 502/504/413, or {@link CUT}.
   * @param result - how the exchange ended, or null when nothing was sent
   */
  answer(result: ProxyResult | null): ProxyAnswer {
    if (result === null) return null;
    const scope = result.context;
    if (result.failure === null && !result.bodyTooLarge) return null;
    const code = result.failure === null ? "payload_too_large" : upstreamErrorCode(result.failure);
    if (!result.responseStarted) return errorResponse(scope, code, this.clock.nowMs());
    // The client must see a broken stream, not a short body; the exchange is logged and counted as
    // the upstream's failure, not as a client abort.
    scope.errorCode = code;
    scope.finish(ERROR_CATALOG[code].status);
    return CUT;
  }
}
