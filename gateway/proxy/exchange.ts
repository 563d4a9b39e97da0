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
import type { Socket } from "node:net";
import type { Dispatcher } from "undici";
import type { HeaderMap } from "../facts.js";
import type { UpstreamErrorReason } from "../observability/metrics.js";
import type { RequestTrace } from "../observability/tracing/request-trace.js";
import type { Endpoint } from "./endpoint.js";
import type { ProxyRequest, ResponseTarget } from "./client-io.js";
import type { Upstream } from "./upstream.js";
import { upstreamErrorReason } from "./upstream-errors.js";

/** How one exchange ended: plain data for the core. */
export interface ExchangeResult {
  /** The endpoint that was called. */
  readonly endpoint: Endpoint;
  /** The upstream's status (101 for a switched handshake), or 0 when it never answered. */
  readonly status: number;
  /** Why the upstream failed (connect, timeout, reset), or null when its answer was relayed. */
  readonly failure: UpstreamErrorReason | null;
  /** The response head reached the client (a failure can then only cut the stream). */
  readonly responseStarted: boolean;
  /** The client went away first: nothing is left to answer. */
  readonly clientLeft: boolean;
}

/**
 * The core's part of an exchange, called synchronously at the moments that cannot wait for the
 * result: an attempt's start, the response head's arrival, and a handshake's failure before any
 * answer.
 * @typeParam C - the core's per-request context (its request scope)
 */
export interface ExchangeHooks<C> {
  /** An attempt goes to `endpoint` (the access line names it even if the client leaves). */
  attemptStarted(context: C, endpoint: Endpoint): void;
  /** Time the head, drop its hop-by-hop fields, write the gateway's fields over the upstream's. */
  upstreamHead(context: C, headers: HeaderMap, endpoint: Endpoint, upgraded: boolean): void;
  /**
   * A WebSocket handshake failed before any answer: answer on the client socket now, which still
   * speaks HTTP (http-proxy-3 ends it right after reporting the error).
   */
  handshakeFailed(context: C, socket: Socket, result: ExchangeResult): void;
}

/** The transport's part: writes a decorated upstream head on its response object. */
export interface HeadWriter<R> {
  /** @param message - the upstream's reason phrase ("" when none; HTTP/2 has none) */
  writeHead(res: R, status: number, message: string, headers: HeaderMap): void;
}

/** What a plain exchange sends. */
export interface PlainRequest {
  readonly method: string;
  /** Path and query, appended to the endpoint's base path. */
  readonly path: string;
  /** The prepared upstream request headers (hop-by-hop and `expect` removed). */
  readonly headers: HeaderMap;
  /** The client's request, whose body streams upstream when `hasBody`. */
  readonly body: ProxyRequest;
  /** HTTP/1.1: a length or chunked framing; HTTP/2: the HEADERS frame did not end the stream. */
  readonly hasBody: boolean;
  /** The balancer's hash key (`consistent_hash`), else undefined. */
  readonly hashKey: string | undefined;
}

/** The exchange of a response object, for the hoisted `close` and `drain` listeners. */
const EXCHANGE: unique symbol = Symbol("gateway.exchange");
type Relayed = ResponseTarget & { [EXCHANGE]?: PlainExchange<unknown, ResponseTarget> };

const CLIENT_ABORTED = new Error("client closed the connection");

/**
 * Runs one plain exchange on `upstream`, streaming both bodies into `res`.
 * @returns the result once the response was relayed, the upstream failed or the client left
 */
export function exchange<C, R extends ResponseTarget>(
  upstream: Upstream,
  request: PlainRequest,
  res: R,
  context: C,
  decorator: ExchangeHooks<C>,
  writer: HeadWriter<R>,
  trace: RequestTrace | null,
): Promise<ExchangeResult> {
  const endpoint = upstream.pick(request.hashKey);
  return new PlainExchange(upstream, endpoint, request.body, res, context, decorator, writer, trace).start(
    request,
  );
}

/** One plain exchange: undici's handler and the result it resolves to. */
class PlainExchange<C, R extends ResponseTarget> implements Dispatcher.DispatchHandler, ExchangeResult {
  status = 0;
  failure: UpstreamErrorReason | null = null;
  responseStarted = false;
  clientLeft = false;
  controller: Dispatcher.DispatchController | null = null;
  /** Settled: a later client `close` has nothing to abort. */
  done = false;
  private resolve: ((r: ExchangeResult) => void) | null = null;

  constructor(
    private readonly upstream: Upstream,
    readonly endpoint: Endpoint,
    private readonly req: ProxyRequest,
    private readonly res: R,
    private readonly context: C,
    private readonly decorator: ExchangeHooks<C>,
    private readonly writer: HeadWriter<R>,
    private readonly trace: RequestTrace | null,
  ) {}

  start(request: PlainRequest): Promise<ExchangeResult> {
    const { endpoint, res } = this;
    const headers = request.headers;
    // undici frames the body itself and refuses the field.
    if (headers["transfer-encoding"] !== undefined) delete headers["transfer-encoding"];
    (res as Relayed)[EXCHANGE] = this as PlainExchange<unknown, ResponseTarget>;
    res.on("close", onClientClose); // emitted once; `on` skips once()'s wrapper
    const done = new Promise<ExchangeResult>((resolve) => (this.resolve = resolve));
    endpoint.inFlight++;
    endpoint.requests.inc();
    this.decorator.attemptStarted(this.context, endpoint);
    this.trace?.startUpstream(request.method, endpoint.address, endpoint.port, headers);
    endpoint.pool.dispatch(
      {
        path: endpoint.basePath + request.path,
        method: request.method as Dispatcher.HttpMethod,
        headers,
        body: request.hasBody ? this.req : null,
      },
      this,
    );
    return done;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.clientLeft) controller.abort(CLIENT_ABORTED);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    parsed: Record<string, string | string[] | undefined>,
    statusMessage?: string,
  ): void {
    // 1xx interim responses are not relayed (the transport answers `Expect: 100-continue` itself).
    if (statusCode < 200) return;
    this.status = statusCode;
    this.trace?.upstreamResponded(statusCode);
    this.upstream.answered(this.endpoint, statusCode);
    // undici parses into a fresh object per response: ours to edit (repeated fields are arrays).
    const headers = parsed as HeaderMap;
    this.decorator.upstreamHead(this.context, headers, this.endpoint, false);
    this.writer.writeHead(this.res, statusCode, statusMessage ?? "", headers);
    this.responseStarted = true;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.res.write(chunk)) {
      controller.pause();
      this.res.once("drain", onDrain);
    }
  }

  onResponseEnd(): void {
    this.res.end();
    this.settle(null);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    // The client left (abort, or a broken request body): there is no one to answer.
    if (this.clientLeft || this.res.destroyed || this.req.socket?.destroyed !== false) {
      this.clientLeft = true;
      this.trace?.upstreamFailed("aborted");
      this.settle(null);
      return;
    }
    const reason = upstreamErrorReason(err);
    this.trace?.upstreamFailed(reason);
    this.upstream.failed(this.endpoint, reason);
    this.settle(reason);
  }

  private settle(failure: UpstreamErrorReason | null): void {
    if (this.done) return;
    this.done = true;
    this.failure = failure;
    this.endpoint.inFlight--;
    this.resolve!(this);
    this.resolve = null;
  }
}

function onClientClose(this: Relayed): void {
  // Not `writableFinished`: an HTTP/2 response reports its reset stream as finished.
  const ex = this[EXCHANGE];
  if (ex === undefined || ex.done) return;
  ex.clientLeft = true;
  ex.controller?.abort(CLIENT_ABORTED);
}

function onDrain(this: Relayed): void {
  this[EXCHANGE]?.controller?.resume();
}
