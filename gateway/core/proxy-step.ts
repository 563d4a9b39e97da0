/**
 * The core's proxy step (SPEC §1 step 8-9, §16): it runs the exchange the core decided on and maps
 * its result to what the transport still has to write — nothing (the answer was relayed), the
 * catalogue's 502/504 (SPEC §2), or a cut stream when the upstream failed mid-body. This is the one
 * place that chooses between 502 and 504; the exchange (`proxy/exchange.ts`) owns the metric of
 * the failure and the CLIENT span, and applies the core's fields to the head through
 * {@link ProxyStep.upstreamHead}.
 */
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { Readable } from "node:stream";
import type { Clock } from "../base/clock.js";
import type { LoopStall } from "../base/loop-stall.js";
import { ERROR_CATALOG, type ErrorCode } from "../base/error-catalog.js";
import type { HeaderMap } from "../base/request-facts.js";
import type { HotMetrics } from "../observability/hot-metrics.js";
import type { UpstreamErrorReason } from "../base/results.js";
import type { ProxyOutcome } from "./outcome.js";
import type { Endpoint } from "../proxy/endpoint.js";
import {
  exchange,
  type ExchangeHooks,
  type ExchangeResult,
  type HeadWriter,
  type PlainRequest,
} from "../proxy/exchange.js";
import { limitBody } from "../proxy/body-limit.js";
import { exchangeUpgrade } from "../proxy/exchange-upgrade.js";
import { readWhole } from "../proxy/read-whole.js";
import { IDEMPOTENT_METHODS, REPLAY_MAX_BYTES, type RetryPolicy } from "../config/retry-policy.js";
import { stripHopByHop } from "../proxy/forwarded-headers.js";
import type { ProxyRequest, ResponseTarget } from "../proxy/client-io.js";
import { addGatewayFields, errorResponse, type GatewayResponse } from "./responses.js";
import { serializeResponse } from "./raw-response.js";
import type { RequestScope } from "./scope.js";
import { chargedUnits } from "../ratelimit/charge.js";
import { rateLimitHeaders } from "../ratelimit/headers.js";

/** The transport destroys the client's stream: the upstream failed after the head went out. */
export const CUT = "cut" as const;

/** What is left to write after an exchange: nothing, a gateway response, or {@link CUT}. */
export type ProxyAnswer = GatewayResponse | typeof CUT | null;

const NOTHING: Promise<ExchangeResult | null> = Promise.resolve(null);

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
  ): Promise<ExchangeResult | null> {
    // The client went away while the core authenticated and counted the call (a reset stream, a
    // closed connection): nothing is sent upstream for it.
    if (scope.finished) return NOTHING;
    const route = scope.route!;
    const headers = outcome.headers;
    const length = headers["content-length"];
    const limit = route.maxBodyBytes;
    let upload: Readable | null = hasBody ? body : null;
    // A body without a length that grows past the limit is cut (one with a length was refused).
    if (hasBody && limit > 0 && length === undefined) upload = limitBody(body, limit);
    let retry = route.retry;
    // SPEC §17: idempotent methods or an Idempotency-Key, else connection failures only (no byte
    // reached the upstream); and a body kept whole for replay.
    if (retry !== null && !IDEMPOTENT_METHODS.has(scope.method) && headers["idempotency-key"] === undefined) {
      retry = route.connectRetry;
    }
    if (retry !== null && hasBody) {
      const n = typeof length === "string" ? Number(length) : NaN;
      if (n <= REPLAY_MAX_BYTES) return this.replayable(scope, outcome, body, n, retry, res, writer);
      retry = null;
    }
    return this.send(scope, outcome, body, upload, null, retry, res, writer);
  }

  /** Reads a body kept for replay, then sends (nothing when the client left while sending it). */
  private async replayable<R extends ResponseTarget>(
    scope: RequestScope,
    outcome: ProxyOutcome,
    body: ProxyRequest,
    length: number,
    retry: RetryPolicy,
    res: R,
    writer: HeadWriter<R>,
  ): Promise<ExchangeResult | null> {
    const replay = await readWhole(body, length);
    if (replay === null) return null;
    return this.send(scope, outcome, body, null, replay, retry, res, writer);
  }

  private send<R extends ResponseTarget>(
    scope: RequestScope,
    outcome: ProxyOutcome,
    body: ProxyRequest,
    upload: Readable | null,
    replay: Buffer | null,
    retry: RetryPolicy | null,
    res: R,
    writer: HeadWriter<R>,
  ): Promise<ExchangeResult> {
    scope.upstreamStartMs = this.clock.monotonicMs();
    if (scope.call!.sampled) scope.upstreamStartStallMs = this.loop.totalMs();
    const request: PlainRequest = {
      method: scope.method,
      path: outcome.path,
      headers: outcome.headers,
      body,
      upload,
      replay,
      retry,
      timeoutMs: scope.route!.timeoutMs,
      hashKey: outcome.hashKey,
    };
    return exchange(outcome.upstream, request, res, scope, this, writer, scope.trace);
  }

  /**
   * Proxies a WebSocket handshake (`req.url` is set to the path to send here); resolves once the
   * upstream answered or failed (then the 502/504 was written on the client socket).
   */
  async upgrade(
    scope: RequestScope,
    outcome: ProxyOutcome,
    req: IncomingMessage,
    socket: Socket,
    head: Buffer,
  ): Promise<void> {
    if (scope.finished) return;
    req.url = outcome.path;
    scope.upstreamStartMs = this.clock.monotonicMs();
    if (scope.call!.sampled) scope.upstreamStartStallMs = this.loop.totalMs();
    const result = await exchangeUpgrade(
      outcome.upstream,
      { req, socket, head, hashKey: outcome.hashKey },
      scope,
      this,
      scope.trace,
    );
    if (result.status !== 0) scope.finish(result.status);
  }

  /** {@link ExchangeHooks}: the 502/504 on the raw socket, now. */
  handshakeFailed(scope: RequestScope, socket: Socket, result: ExchangeResult): void {
    const answer = this.answer(result);
    if (answer === null || answer === CUT) return;
    socket.end(serializeResponse(answer));
    scope.finish(answer.status);
  }

  /** {@link ExchangeHooks}: the access line names the endpoint of the latest attempt. */
  attemptStarted(scope: RequestScope, endpoint: Endpoint): void {
    scope.endpoint = endpoint;
    scope.attempts++;
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
  answer(result: ExchangeResult | null): ProxyAnswer {
    if (result === null) return null;
    const scope = result.context as RequestScope;
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
