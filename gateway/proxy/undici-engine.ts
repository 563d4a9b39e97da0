/**
 * The plain-HTTP engine on undici (Node's own HTTP/1.1 client): one `Pool` per upstream and
 * `pool.dispatch()` with one handler object per request (undici 7 handler API,
 * `onRequestStart`/`onResponseStart`/...). Measured in `test/bench` at about 1.5x the requests per
 * second of http-proxy-3 with half its CPU per request; WebSocket upgrades stay on http-proxy-3.
 *
 * Behaviour kept from the http-proxy engine (same tests, both engines): the client's Host and the
 * pipeline's forwarded headers go upstream as prepared; request and response bodies stream with
 * backpressure; hop-by-hop fields of the response are removed; `timeout_ms` before the head is a
 * 504 and mid-body cuts the client connection; a client abort aborts the upstream request.
 *
 * Differences from http-proxy-3 that the tests tolerate: undici's headers and connect timers tick
 * on a coarse clock, so a 504 or connect 502 fires up to about 1 s after `timeout_ms` /
 * `connect_timeout_ms`; and the time before the response head counts from dispatch, so an upload
 * that outlasts `timeout_ms` before the upstream answers gets a 504 even while bytes still flow
 * (http-proxy's timeout was socket inactivity).
 *
 * Hoisted listeners find the request's handler on `res` under {@link FORWARD}.
 */
import type { IncomingHttpHeaders } from "node:http";
import { Pool, type Dispatcher } from "undici";
import type { GatewayConfig } from "../config/schema.js";
import type { ScopedRequest, ScopedResponse } from "../scope.js";
import { upstreamErrorReason } from "./upstream-errors.js";
import type { ProxyHooks } from "./upstream-proxy.js";

type UpstreamConfig = GatewayConfig["upstreams"][string];

/** The handler of the request a response belongs to. */
const FORWARD: unique symbol = Symbol("gateway.forward");
type ForwardedResponse = ScopedResponse & { [FORWARD]?: Forward };

const CLIENT_ABORTED = new Error("client closed the connection");

/** Forwards plain HTTP requests to one upstream. */
export class UndiciForwarder {
  readonly name: string;
  readonly hooks: ProxyHooks;
  private readonly pool: Pool;
  /** The upstream URL's path without its trailing slash ("" for the root). */
  private readonly basePath: string;

  /**
   * @param name - the upstream's config name (metrics label)
   * @param cfg - `upstreams.<name>`: url, timeout_ms (silence before and during the body, ms),
   *   connect_timeout_ms (ms), max_sockets (pool connections), keep_alive_ms (idle pooled socket, ms)
   */
  constructor(name: string, cfg: UpstreamConfig, hooks: ProxyHooks) {
    this.name = name;
    this.hooks = hooks;
    const url = new URL(cfg.url);
    this.basePath = url.pathname.replace(/\/+$/, "");
    this.pool = new Pool(url.origin, {
      connections: cfg.max_sockets,
      pipelining: 1,
      keepAliveTimeout: cfg.keep_alive_ms,
      // An upstream's `Keep-Alive: timeout=N` may shorten, never lengthen, the configured idle time.
      keepAliveMaxTimeout: cfg.keep_alive_ms,
      headersTimeout: cfg.timeout_ms,
      bodyTimeout: cfg.timeout_ms,
      connect: { timeout: cfg.connect_timeout_ms },
    });
  }

  /** Forwards an HTTP request; `req.url` must already hold the path to send. */
  web(req: ScopedRequest, res: ScopedResponse): void {
    const h = req.headers;
    const hasBody = h["content-length"] !== undefined || h["transfer-encoding"] !== undefined;
    // undici frames the body itself and refuses the field (the pipeline already removed the
    // hop-by-hop ones and `expect`).
    if (h["transfer-encoding"] !== undefined) delete h["transfer-encoding"];
    const forward = new Forward(this, req, res);
    (res as ForwardedResponse)[FORWARD] = forward;
    res.on("close", onClientClose); // emitted once; `on` skips once()'s wrapper
    this.pool.dispatch(
      {
        path: this.basePath + (req.url ?? "/"),
        method: (req.method ?? "GET") as Dispatcher.HttpMethod,
        headers: h,
        body: hasBody ? req : null,
      },
      forward,
    );
  }

  /** Closes pooled sockets (and aborts what still runs on them, as `agent.destroy()` did). */
  close(): void {
    this.pool.destroy().catch(ignore);
  }
}

/** One request's relay from undici's callbacks into `res`. */
class Forward implements Dispatcher.DispatchHandler {
  controller: Dispatcher.DispatchController | null = null;
  /** The exchange ended (response complete or failed): a later client `close` has nothing to abort. */
  done = false;
  /** The client went away before undici handed over its controller. */
  clientGone = false;

  constructor(
    private readonly forwarder: UndiciForwarder,
    private readonly req: ScopedRequest,
    private readonly res: ScopedResponse,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.clientGone) controller.abort(CLIENT_ABORTED);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    parsed: Record<string, string | string[] | undefined>,
    statusMessage?: string,
  ): void {
    // 1xx interim responses are not relayed (Node answers `Expect: 100-continue` itself).
    if (statusCode < 200) return;
    // undici parses into a fresh object per response: ours to edit (repeated fields are arrays).
    const headers = parsed as IncomingHttpHeaders;
    this.forwarder.hooks.upstreamResponseHead(headers, this.req, this.res, this.forwarder.name);
    this.res.writeHead(statusCode, statusMessage === "" ? undefined : statusMessage, headers);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.res.write(chunk)) {
      controller.pause();
      this.res.once("drain", onDrain);
    }
  }

  onResponseEnd(): void {
    this.done = true;
    this.res.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.done = true;
    const req = this.req;
    const res = this.res;
    // The client left (abort, or a broken request body): there is no one to answer.
    if (this.clientGone || res.destroyed || req.socket.destroyed) return;
    this.forwarder.hooks.upstreamError(req, res, upstreamErrorReason(err));
  }
}

function onClientClose(this: ForwardedResponse): void {
  const forward = this[FORWARD];
  if (forward === undefined || forward.done || this.writableFinished) return;
  forward.clientGone = true;
  forward.controller?.abort(CLIENT_ABORTED);
}

function onDrain(this: ForwardedResponse): void {
  this[FORWARD]?.controller?.resume();
}

function ignore(): void {}
