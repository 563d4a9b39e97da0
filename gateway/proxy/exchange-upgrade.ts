/**
 * The exchange of a WebSocket handshake (SPEC §6, §16): balanced like any call, relayed by the
 * chosen endpoint's http-proxy-3 relay, which writes the upstream's answer itself. The core's
 * fields are therefore applied synchronously when the answer arrives (a 101, or any other status
 * relayed as an ordinary response with `Connection: close`), and so is its 502/504 when the upstream
 * fails before any answer (http-proxy-3 ends the client socket right after); the result says how it
 * ended.
 */
import type { ClientRequest, IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { HeaderMap } from "../base/request-facts.js";
import type { UpstreamErrorReason } from "../base/results.js";
import type { RequestTrace } from "../observability/tracing/request-trace.js";
import type { Endpoint } from "./endpoint.js";
import type { ExchangeHooks, ExchangeResult, HandshakeWriter } from "./exchange-types.js";
import { settlement } from "./settlement.js";
import type { Upstream } from "./upstream.js";
import { UPGRADE, type UpgradeExchange } from "./websocket.js";

/** What an upgrade exchange sends. */
export interface UpgradeRequest {
  /** The handshake, `headers` prepared (`url` is set to the path to send). */
  readonly req: IncomingMessage;
  readonly socket: Socket;
  /** The bytes read past the handshake's head. */
  readonly head: Buffer;
  /** The balancer's hash key (`consistent_hash`), else undefined. */
  readonly hashKey: string | undefined;
}

/**
 * Runs one handshake on `upstream`; after a 101 the relay pipes both ways on its own.
 * @returns the result once the upstream answered or failed
 */
export function exchangeUpgrade<C>(
  upstream: Upstream,
  request: UpgradeRequest,
  context: C,
  decorator: ExchangeHooks<C>,
  writer: HandshakeWriter<C>,
  trace: RequestTrace | null,
): Promise<ExchangeResult<C>> {
  const endpoint = upstream.pick(request.hashKey);
  return new HandshakeExchange(upstream, endpoint, context, decorator, writer, trace).start(request);
}

/** The handshake exchange of a client socket, for its hoisted `close` listener. */
const HANDSHAKE: unique symbol = Symbol("gateway.handshake");
type ClientSocket = Socket & { [HANDSHAKE]?: HandshakeExchange<unknown> };

class HandshakeExchange<C> implements UpgradeExchange, ExchangeResult<C> {
  status = 0;
  failure: UpstreamErrorReason | null = null;
  responseStarted = false;
  clientLeft = false;
  attempts = 1;
  readonly bodyTooLarge = false;
  done = false;
  /** The handshake request upstream, once http-proxy-3 made it. */
  proxyReq: ClientRequest | null = null;
  resolve: ((r: ExchangeResult<C>) => void) | null = null;
  /** When the handshake was sent (monotonic ms). */
  private startedMs = 0;

  constructor(
    private readonly upstream: Upstream,
    readonly endpoint: Endpoint,
    readonly context: C,
    private readonly decorator: ExchangeHooks<C>,
    private readonly writer: HandshakeWriter<C>,
    private readonly trace: RequestTrace | null,
  ) {}

  start({ req, socket, head }: UpgradeRequest): Promise<ExchangeResult<C>> {
    const done = settlement<ExchangeResult<C>>(this);
    const endpoint = this.endpoint;
    (req as IncomingMessage & { [UPGRADE]?: UpgradeExchange })[UPGRADE] = this;
    (socket as ClientSocket)[HANDSHAKE] = this as HandshakeExchange<unknown>;
    socket.once("close", onClientClose);
    this.upstream.ledger.tryDispatched(endpoint);
    endpoint.metrics.requests.inc();
    this.startedMs = this.upstream.clock.monotonicMs();
    this.decorator.attemptStarted(this.context, endpoint);
    this.trace?.startUpstream(req.method ?? "GET", endpoint.address, endpoint.port, req.headers);
    endpoint.ws.relay(req, socket, head);
    // http-proxy-3 drops a handshake it will not relay (not a GET with `Upgrade: websocket`) by
    // destroying the socket, with no event: nothing went upstream.
    if (this.proxyReq === null && !this.done) this.left();
    return done;
  }

  sent(proxyReq: ClientRequest): void {
    this.proxyReq = proxyReq;
  }

  /** The client went away before an answer: the upstream handshake is aborted. */
  left(): void {
    if (this.done) return;
    this.clientLeft = true;
    this.proxyReq?.destroy();
    this.trace?.upstreamFailed("aborted");
    this.settle(null);
  }

  upgraded(headers: HeaderMap): void {
    this.answer(101, headers);
  }

  refused(status: number, headers: HeaderMap): void {
    this.answer(status, headers);
    headers.connection = "close";
  }

  failed(socket: Socket, reason: UpstreamErrorReason): void {
    // After an answer the pipe broke: the socket is no longer the core's to answer on.
    if (this.done || !socket.writable) {
      socket.destroy();
      this.left();
      return;
    }
    this.trace?.upstreamFailed(reason);
    this.upstream.failed(this.endpoint, reason);
    this.settle(reason);
    this.writer.handshakeFailed(socket, this);
  }

  private answer(status: number, headers: HeaderMap): void {
    this.status = status;
    this.trace?.upstreamResponded(status);
    this.upstream.answered(this.endpoint, status, this.startedMs);
    this.decorator.upstreamHead(this.context, headers, this.endpoint, status === 101, false);
    this.responseStarted = true;
    this.settle(null);
  }

  private settle(failure: UpstreamErrorReason | null): void {
    if (this.done) return;
    this.done = true;
    this.failure = failure;
    this.upstream.ledger.tryEnded(this.endpoint, false);
    this.resolve!(this);
    this.resolve = null;
  }
}

function onClientClose(this: ClientSocket): void {
  this[HANDSHAKE]?.left();
}
