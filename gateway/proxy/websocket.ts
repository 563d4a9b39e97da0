/**
 * WebSocket upgrades through http-proxy-3 (the maintained successor of the http-proxy API), with
 * the endpoint's agent (so `https://` upstreams and their TLS settings apply). The
 * handshake is authenticated and counted before it gets here; this relays it and then pipes.
 *
 * - The connect timer watches the upstream socket (`connect_timeout_ms`), the response timer the
 *   handshake (`timeout_ms`); both stop once the upstream answers.
 * - A 101 gets the gateway's headers ({@link UpgradeExchange.upgraded}); a non-101 answer is an
 *   ordinary response: hop-by-hop fields removed, the gateway's headers added, counted with its own
 *   status ({@link UpgradeExchange.refused}); an upstream failure before either is reported to the
 *   exchange ({@link UpgradeExchange.failed}), which the core answers 502/504 on the still-HTTP socket.
 *
 * The handlers are per endpoint; each finds its handshake's exchange on `req` under {@link UPGRADE}.
 */
import type { Agent, ClientRequest, IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { ProxyServer } from "http-proxy-3";
import type { UpstreamErrorReason } from "../base/results.js";
import type { HeaderMap } from "../base/request-facts.js";
import { CONNECT_TIMEOUT_CODE, RESPONSE_TIMEOUT_CODE, upstreamErrorReason } from "./upstream-errors.js";

/** The exchange of one handshake, found on its request under {@link UPGRADE}. */
export interface UpgradeExchange {
  /** The handshake is on its way upstream as `proxyReq` (to abort when the client leaves first). */
  sent(proxyReq: ClientRequest): void;
  /** The upstream switched protocols: the gateway's fields go on the 101, in place, now. */
  upgraded(headers: HeaderMap): void;
  /** The upstream answered with `status` (not 101): its fields are edited in place, now. */
  refused(status: number, headers: HeaderMap): void;
  /** The upstream failed before answering (the client socket still speaks HTTP) or after. */
  failed(socket: Socket, reason: UpstreamErrorReason): void;
}

/** The slot of a handshake's {@link UpgradeExchange} on its `IncomingMessage`. */
export const UPGRADE: unique symbol = Symbol("gateway.upgrade");
type Handshake = IncomingMessage & { [UPGRADE]?: UpgradeExchange };

/** Timings of one endpoint, read at each handshake (a reload may change `timeoutMs`). */
export interface UpgradeTimeouts {
  /** Response to the handshake (ms). */
  timeoutMs: number;
  /** TCP connect (ms). */
  connectTimeoutMs: number;
}

/** Relays WebSocket handshakes to one endpoint. */
export class WebSocketRelay {
  private readonly proxy: ProxyServer;

  /**
   * @param target - the endpoint's URL
   * @param agent - the endpoint's keep-alive agent (`http.Agent` or `https.Agent` with its TLS)
   * @param rejectUnauthorized - verify the upstream's certificate (http-proxy's `secure`)
   */
  constructor(target: string, agent: Agent, rejectUnauthorized: boolean, timeouts: UpgradeTimeouts) {
    this.proxy = new ProxyServer({
      target,
      agent,
      xfwd: false,
      ws: true,
      prependPath: true,
      secure: rejectUnauthorized,
    });
    this.proxy.on("proxyReqWs", (proxyReq: ClientRequest, req: Handshake) => {
      req[UPGRADE]?.sent(proxyReq);
      proxyReq.setTimeout(timeouts.timeoutMs, onResponseTimeout);
      proxyReq.once("socket", (s: Socket) => {
        if (s.connecting) armConnectTimer(proxyReq, s, timeouts.connectTimeoutMs);
      });
      proxyReq.once("upgrade", (proxyRes: IncomingMessage, proxySocket: Socket) => {
        proxyReq.setTimeout(0);
        proxySocket.setTimeout(0);
        req[UPGRADE]?.upgraded(proxyRes.headers);
      });
      // Before http-proxy-3's own listener, which copies these headers to the client.
      proxyReq.prependListener("response", (proxyRes: IncomingMessage) => {
        proxyReq.setTimeout(0);
        req[UPGRADE]?.refused(proxyRes.statusCode ?? 502, proxyRes.headers);
      });
    });
    this.proxy.on("error", (err: NodeJS.ErrnoException, req: Handshake, socket: unknown) => {
      const exchange = req[UPGRADE];
      if (exchange !== undefined) exchange.failed(socket as Socket, upstreamErrorReason(err));
      else (socket as Socket).destroy();
    });
    // A client abort during the exchange: nothing to answer, http-proxy destroys the request.
    this.proxy.on("econnreset", () => {});
  }

  /** Forwards a handshake (`req.url` already holds the path to send) and then pipes both ways. */
  relay(req: IncomingMessage, socket: Socket, head: Buffer): void {
    this.proxy.ws(req, socket, head);
  }
}

function onResponseTimeout(this: ClientRequest): void {
  const err: NodeJS.ErrnoException = new Error("upstream timed out");
  err.code = RESPONSE_TIMEOUT_CODE;
  this.destroy(err);
}

/** Only new connections pay for this timer; pooled keep-alive sockets are already connected. */
function armConnectTimer(proxyReq: ClientRequest, socket: Socket, ms: number): void {
  const timer = setTimeout(() => {
    const err: NodeJS.ErrnoException = new Error("upstream connect timed out");
    err.code = CONNECT_TIMEOUT_CODE;
    proxyReq.destroy(err);
  }, ms);
  timer.unref();
  socket.once("connect", () => clearTimeout(timer));
  socket.once("close", () => clearTimeout(timer));
}
