/**
 * One upstream. Plain HTTP goes through the engine `upstreams.<name>.engine` names: undici
 * ({@link UndiciForwarder}, the default) or http-proxy-3 as below; WebSocket upgrades always do.
 *
 * The http-proxy API (http-proxy-3): a ProxyServer and a keep-alive agent per
 * upstream, connect and response timeouts, response-header decoration in `proxyRes` (editing
 * `proxyRes.headers`, since upstream headers would overwrite earlier `setHeader` calls), and
 * WebSocket upgrades whose 101 carries the gateway's headers (`proxyReqWs`).
 *
 * Event handlers are hoisted: they find the request's scope on `req`/`res` under {@link SCOPE}.
 */
import http, { type ClientRequest, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { ProxyServer } from "http-proxy-3";
import type { GatewayConfig } from "../config/schema.js";
import type { UpstreamErrorReason } from "../observability/metrics.js";
import { SCOPE, type RequestScope, type ScopedRequest, type ScopedResponse } from "../scope.js";
import { CONNECT_TIMEOUT_CODE, RESPONSE_TIMEOUT_CODE, upstreamErrorReason } from "./upstream-errors.js";
import { UndiciForwarder } from "./undici-engine.js";

/** Callbacks into the pipeline, the one place outcomes become responses. */
export interface ProxyHooks {
  /** Adds the gateway's headers to headers about to go out (in place): the WebSocket 101. */
  decorate(headers: IncomingHttpHeaders, scope: RequestScope): void;
  /**
   * The upstream's response head arrived, whichever engine fetched it: time it, drop its
   * hop-by-hop fields and add the gateway's headers, in place, before it is written to `res`.
   */
  upstreamResponseHead(
    headers: IncomingHttpHeaders,
    req: ScopedRequest,
    res: ScopedResponse,
    upstream: string,
  ): void;
  /** The upstream failed before a response started (`res` is still writable) or after (it is not). */
  upstreamError(req: ScopedRequest, res: ScopedResponse | Socket, reason: UpstreamErrorReason): void;
}

type UpstreamConfig = GatewayConfig["upstreams"][string];

/** A proxied upstream: plain HTTP on the configured engine, WebSocket upgrades on http-proxy-3. */
export class UpstreamProxy {
  readonly name: string;
  private readonly proxy: ProxyServer;
  private readonly agent: http.Agent;
  /** The undici engine (`engine: undici`), or null when http-proxy-3 forwards plain HTTP too. */
  private readonly forwarder: UndiciForwarder | null;

  /**
   * @param name - the upstream's config name (metrics label)
   * @param cfg - `upstreams.<name>`: url, engine, timeout_ms (response, ms), connect_timeout_ms (ms), max_sockets, keep_alive_ms
   */
  constructor(name: string, cfg: UpstreamConfig, hooks: ProxyHooks) {
    this.name = name;
    this.forwarder = cfg.engine === "undici" ? new UndiciForwarder(name, cfg, hooks) : null;
    this.agent = new http.Agent({
      keepAlive: true,
      maxSockets: cfg.max_sockets,
      maxFreeSockets: Math.min(cfg.max_sockets, 64),
      timeout: cfg.keep_alive_ms,
      scheduling: "lifo",
    });
    this.proxy = new ProxyServer({
      target: cfg.url,
      agent: this.agent,
      xfwd: false,
      ws: true,
      prependPath: true,
    });
    const timeoutMs = cfg.timeout_ms;
    const connectTimeoutMs = cfg.connect_timeout_ms;
    this.proxy.on(
      "proxyReq",
      (proxyReq: ClientRequest, req: IncomingMessage, _res, _opts, socket: Socket) => {
        proxyReq.setTimeout(timeoutMs, onResponseTimeout);
        if (socket.connecting) armConnectTimer(proxyReq, socket, connectTimeoutMs);
      },
    );
    this.proxy.on("proxyRes", (proxyRes: IncomingMessage, req: IncomingMessage, res: ScopedResponse) => {
      hooks.upstreamResponseHead(proxyRes.headers, req, res, name);
    });
    this.proxy.on("proxyReqWs", (proxyReq: ClientRequest, req: IncomingMessage, socket: Socket) => {
      if (socket.connecting) armConnectTimer(proxyReq, socket, connectTimeoutMs);
      proxyReq.setTimeout(timeoutMs, onResponseTimeout);
      proxyReq.once("upgrade", (proxyRes: IncomingMessage, proxySocket: Socket) => {
        proxyReq.setTimeout(0);
        proxySocket.setTimeout(0);
        const scope = (req as ScopedRequest)[SCOPE];
        if (scope !== undefined) hooks.decorate(proxyRes.headers, scope);
      });
    });
    this.proxy.on(
      "error",
      (err: NodeJS.ErrnoException, req: IncomingMessage, res: ScopedResponse | Socket) => {
        hooks.upstreamError(req as ScopedRequest, res, upstreamErrorReason(err));
      },
    );
    // A client abort during the upstream exchange: nothing to answer, http-proxy destroys the request.
    this.proxy.on("econnreset", () => {});
  }

  /** Forwards an HTTP request; `req.url` must already hold the path to send. */
  web(req: ScopedRequest, res: ScopedResponse): void {
    if (this.forwarder !== null) this.forwarder.web(req, res);
    else this.proxy.web(req, res);
  }

  /** Forwards a WebSocket handshake and then pipes both ways. */
  ws(req: ScopedRequest, socket: Socket, head: Buffer): void {
    this.proxy.ws(req, socket, head);
  }

  /** Closes pooled sockets. */
  close(): void {
    this.agent.destroy();
    this.forwarder?.close();
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
