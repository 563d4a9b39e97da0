/**
 * One proxied call from its admission to its release (SPEC §16-§18): {@link admit} lets it in (or
 * sheds it), it runs the plain exchange or the WebSocket handshake, it decides what the route's
 * resilience allows this call (the body limit, retry eligibility, the body kept for replay), and
 * its one idempotent {@link UpstreamCall.end} releases it from the upstream's
 * {@link InFlightLedger}, whatever way the call ends (answered, refused by the limiter after
 * admission, failed, cut, or the client gone). undici's `BalancedPool` in miniature: what admits
 * the call also releases it, so the count the limit applies to cannot drift.
 */
import type { Readable } from "node:stream";
import type { Milliseconds } from "../base/clock.js";
import type { HeaderMap } from "../base/request-facts.js";
import { IDEMPOTENT_METHODS, REPLAY_MAX_BYTES, type RetryPolicy } from "../config/retry-policy.js";
import type { RequestTrace } from "../observability/tracing/request-trace.js";
import { limitBody } from "./body-limit.js";
import type { ProxyRequest, ResponseTarget } from "./client-io.js";
import type {
  ExchangeHooks,
  ExchangeResult,
  HandshakeWriter,
  HeadWriter,
  PlainRequest,
} from "./exchange-types.js";
import { exchangeUpgrade, type UpgradeRequest } from "./exchange-upgrade.js";
import { PlainExchange } from "./plain-exchange.js";
import { readWhole } from "./read-whole.js";
import type { SheddingPolicy } from "./shedding-policy.js";
import type { Upstream } from "./upstream.js";

/** What a route asks of its calls (SPEC §17), compiled at load (`routing/routes.ts`). */
export interface CallRoute {
  /** Request body limit (bytes, 0 = none). */
  readonly maxBodyBytes: number;
  /** The route's retries, or null. */
  readonly retry: RetryPolicy | null;
  /** {@link retry} restricted to `connect_failure` (calls that are not idempotent), or null. */
  readonly connectRetry: RetryPolicy | null;
  /** `timeout_ms` over every try and backoff until a response head (ms), or 0. */
  readonly timeoutMs: Milliseconds;
}

/** Where a plain call goes, as the core prepared it (its proxy outcome). */
export interface CallTarget {
  /** Path and query, appended to the endpoint's base path. */
  readonly path: string;
  /** The prepared upstream request headers. */
  readonly headers: HeaderMap;
  /** The balancer's hash key (`consistent_hash`), else undefined. */
  readonly hashKey: string | undefined;
}

/**
 * Admits one call of the caller's plan to `upstream` (SPEC §17 circuit breaking, §18 load
 * shedding), or sheds it (counted in `gateway_upstream_overloaded_total`). Without a limit every
 * call is admitted.
 * @param plan - the caller's plan (its priority, SPEC §18), or null
 * @param shedding - the `load_shedding` block of the configuration the call runs on
 * @returns the admitted call, in flight until its `end()`; null when shed (answer 503)
 */
export function admit(
  upstream: Upstream,
  plan: string | null,
  shedding: SheddingPolicy,
): UpstreamCall | null {
  const admission = upstream.admission;
  let shed: "shadow" | null = null;
  if (admission !== null) {
    const priority = shedding.priorityOf(plan);
    const admitted = admission.admit(priority, shedding.shares[priority]);
    if (admitted === "shed") return null;
    if (admitted === "shadow") shed = "shadow";
  }
  upstream.ledger.callAdmitted();
  return new UpstreamCall(upstream, shed, admission !== null);
}

/** A call an upstream admitted. */
export class UpstreamCall {
  readonly upstream: Upstream;
  /** SPEC §18: `"shadow"` when shadow mode would have shed it (the access line's `shed`), else null. */
  readonly shed: "shadow" | null;
  /** Its upstream has a concurrency limit: its time to the response head is the limit's sample. */
  readonly sampled: boolean;
  private ended = false;

  constructor(upstream: Upstream, shed: "shadow" | null, sampled: boolean) {
    this.upstream = upstream;
    this.shed = shed;
    this.sampled = sampled;
  }

  /**
   * Runs the plain exchange, streaming the answer into `res`. SPEC §17: a body without a length is
   * cut past the route's limit (one with a length over it was refused from the head); retries
   * only for idempotent methods or an `Idempotency-Key`, else connection failures only (no byte
   * reached the upstream); and only with a body kept whole for replay (at most 64 KiB).
   * @param writer - the transport, which writes the decorated head on `res`
   * @returns how the exchange ended; null when nothing was sent (the client left while its body
   *   was read for replay)
   */
  plain<C, R extends ResponseTarget>(
    method: string,
    target: CallTarget,
    body: ProxyRequest,
    hasBody: boolean,
    route: CallRoute,
    res: R,
    context: C,
    hooks: ExchangeHooks<C>,
    writer: HeadWriter<R>,
    trace: RequestTrace | null,
  ): Promise<ExchangeResult<C> | null> {
    const headers = target.headers;
    const length = headers["content-length"];
    const limit = route.maxBodyBytes;
    let upload: Readable | null = hasBody ? body : null;
    if (hasBody && limit > 0 && length === undefined) upload = limitBody(body, limit);
    let retry = route.retry;
    if (retry !== null && !IDEMPOTENT_METHODS.has(method) && headers["idempotency-key"] === undefined) {
      retry = route.connectRetry;
    }
    if (retry !== null && hasBody) {
      const n = typeof length === "string" ? Number(length) : NaN;
      if (n <= REPLAY_MAX_BYTES) {
        const kept = { method, target, body, n, retry, route };
        return this.replayable(kept, res, context, hooks, writer, trace);
      }
      retry = null;
    }
    const request = plainRequest(method, target, body, upload, null, retry, route);
    return this.send(request, res, context, hooks, writer, trace);
  }

  /**
   * Runs a WebSocket handshake; after a 101 the relay pipes both ways on its own.
   * @param path - the path (and query) to send
   * @param writer - the transport, which answers a handshake that failed before any answer
   * @returns the result once the upstream answered or failed
   */
  upgrade<C>(
    request: UpgradeRequest,
    path: string,
    context: C,
    hooks: ExchangeHooks<C>,
    writer: HandshakeWriter<C>,
    trace: RequestTrace | null,
  ): Promise<ExchangeResult<C>> {
    request.req.url = path;
    return exchangeUpgrade(this.upstream, request, context, hooks, writer, trace);
  }

  /**
   * One time to the response head, for the adaptive limit (SPEC §18); nothing without a limit.
   * @param latencyMs - from the try's start to its head (ms)
   * @param stallMs - the gateway's event-loop stall meanwhile (ms), discounted from it
   */
  sample(latencyMs: Milliseconds, stallMs: Milliseconds): void {
    this.upstream.admission?.sample(latencyMs, stallMs);
  }

  /** The call's one release: its admitted count leaves the ledger. Later calls do nothing. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.upstream.ledger.callEnded();
  }

  /** Reads a body kept for replay whole, then sends; null when the client left while sending it. */
  private async replayable<C, R extends ResponseTarget>(
    kept: {
      method: string;
      target: CallTarget;
      body: ProxyRequest;
      n: number;
      retry: RetryPolicy;
      route: CallRoute;
    },
    res: R,
    context: C,
    hooks: ExchangeHooks<C>,
    writer: HeadWriter<R>,
    trace: RequestTrace | null,
  ): Promise<ExchangeResult<C> | null> {
    const replay = await readWhole(kept.body, kept.n);
    if (replay === null) return null;
    const { method, target, body, retry, route } = kept;
    const request = plainRequest(method, target, body, null, replay, retry, route);
    return this.send(request, res, context, hooks, writer, trace);
  }

  /** Runs the plain exchange of `request`. */
  private send<C, R extends ResponseTarget>(
    request: PlainRequest,
    res: R,
    context: C,
    hooks: ExchangeHooks<C>,
    writer: HeadWriter<R>,
    trace: RequestTrace | null,
  ): Promise<ExchangeResult<C>> {
    return new PlainExchange(this.upstream, request, res, context, hooks, writer, trace).start();
  }
}

function plainRequest(
  method: string,
  target: CallTarget,
  body: ProxyRequest,
  upload: Readable | null,
  replay: Buffer | null,
  retry: RetryPolicy | null,
  route: CallRoute,
): PlainRequest {
  const { path, headers, hashKey } = target;
  return { method, path, headers, body, upload, replay, retry, timeoutMs: route.timeoutMs, hashKey };
}
