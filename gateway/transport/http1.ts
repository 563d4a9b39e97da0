/**
 * The HTTP/1.1 writer: the only code that knows `node:http` servers. It turns a request into facts
 * and a scope, hands them to the core (`pipeline.ts`), and writes the outcome: a gateway response,
 * a proxied exchange on the upstream client, or a WebSocket relay. Requests Node's parser refuses
 * (bad framing 400, head timeout 408, head too large 431) become ordinary outcomes too, written on
 * the raw socket, so every response carries the rate-limit fields, an access line and a metric.
 *
 * Connection-specific fields (`Connection`) are set here and nowhere else.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import type { Clock } from "../clock.js";
import { ERROR_CATALOG, type ErrorCode } from "../errors.js";
import type { HeaderMap, RequestFacts } from "../facts.js";
import type { GatewayMetrics, UpstreamErrorReason } from "../observability/metrics.js";
import type { Outcome } from "../outcome.js";
import type { Pipeline } from "../pipeline.js";
import type { ProxyRequest, ResponseTarget, UpstreamSink } from "../proxy/sink.js";
import type { UpgradeSink } from "../proxy/websocket.js";
import { errorResponse, jsonResponse, preflightResponse, type GatewayResponse } from "../responses.js";
import type { Runtime } from "../runtime.js";
import { RequestScope, SCOPE, type FinishObserver } from "../scope.js";
import { serializeResponse } from "./raw-response.js";

type Scoped<T> = T & { [SCOPE]?: RequestScope };

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Dependencies of {@link Http1Transport}. */
export interface Http1Deps {
  pipeline: Pipeline;
  clock: Clock;
  metrics: GatewayMetrics;
  logger: Logger;
  /** Told of every request's end, in order (metrics, access line, ...). */
  observers: readonly FinishObserver[];
  /** The runtime new requests start on. */
  runtime: () => Runtime;
}

/** Listeners for a `node:http` server, and the upstream client's sinks for its requests. */
export class Http1Transport implements UpstreamSink, UpgradeSink {
  private readonly d: Http1Deps;

  constructor(deps: Http1Deps) {
    this.d = deps;
    this.onRequest = this.onRequest.bind(this);
    this.onUpgrade = this.onUpgrade.bind(this);
    this.onClientError = this.onClientError.bind(this);
  }

  /** `request` listener. */
  onRequest(req: Scoped<IncomingMessage>, res: Scoped<ServerResponse>): void {
    const scope = this.open(req.headers["x-request-id"], req.method, req.httpVersion);
    req[SCOPE] = scope;
    res[SCOPE] = scope;
    res.on("close", onResponseClose); // emitted once; `on` skips once()'s wrapper
    void this.serve(req, res, scope);
  }

  /** `upgrade` listener: the handshake goes through the same core; refusals are plain HTTP. */
  onUpgrade(req: Scoped<IncomingMessage>, socket: Duplex, head: Buffer): void {
    const scope = this.open(req.headers["x-request-id"], req.method, req.httpVersion);
    req[SCOPE] = scope;
    (socket as Scoped<Duplex>)[SCOPE] = scope;
    socket.on("error", ignore);
    socket.once("close", onSocketClose);
    void this.serveUpgrade(req, socket as Socket, head, scope);
  }

  /** `clientError` listener: the parser refused the request (SPEC §3 "every response"). */
  onClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
    const s = socket as Scoped<Socket> & { _httpMessage?: { headersSent: boolean } | null };
    // Node reports each later chunk of a refused connection again; the first answer stands.
    if (s[SCOPE] !== undefined) return;
    // A response already on the wire cannot be followed by another on this connection.
    if (err.code === "ECONNRESET" || !s.writable || s._httpMessage?.headersSent === true) {
      s.destroy();
      return;
    }
    const code: ErrorCode =
      err.code === "HPE_HEADER_OVERFLOW"
        ? "header_too_large"
        : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? "request_timeout"
          : "bad_framing";
    const scope = this.open(undefined, "-", "1.1");
    scope.clientIp = s.remoteAddress ?? "unknown";
    s[SCOPE] = scope;
    void this.refuse(s, scope, code);
  }

  /** {@link UpstreamSink}: the upstream's head, decorated in place before it is written. */
  responseHead(req: ProxyRequest, res: ResponseTarget, headers: HeaderMap, upstream: string): void {
    const scope = (req as Scoped<ProxyRequest>)[SCOPE];
    if (scope === undefined) return;
    this.d.pipeline.upstreamHead(scope, headers, upstream);
    // The client's own Connection header was stripped before forwarding; answer by its connection.
    headers.connection = (res as ServerResponse).shouldKeepAlive ? "keep-alive" : "close";
  }

  /** {@link UpstreamSink}: 502/504 while the response has not started, else a cut connection. */
  upstreamError(req: ProxyRequest, res: ResponseTarget, reason: UpstreamErrorReason, upstream: string): void {
    this.d.metrics.upstreamErrors.inc({ upstream, reason });
    const scope = (req as Scoped<ProxyRequest>)[SCOPE];
    if (scope !== undefined && !res.headersSent) {
      this.send(res as ServerResponse, errorResponse(scope, upstreamErrorCode(reason), this.d.clock.nowMs()));
    } else {
      // The client must see a broken stream, not a short body; the exchange is logged and counted
      // as the upstream's failure, not as a client abort.
      if (scope !== undefined) {
        const code = upstreamErrorCode(reason);
        scope.errorCode = code;
        scope.finish(ERROR_CATALOG[code].status, performance.now());
      }
      res.destroy();
    }
  }

  /** {@link UpgradeSink}: the 101 carries the gateway's fields; the exchange is counted as 101. */
  upgraded(req: IncomingMessage, headers: HeaderMap): void {
    const scope = (req as Scoped<IncomingMessage>)[SCOPE];
    if (scope === undefined) return;
    scope.trace?.upstreamResponded(101);
    this.d.pipeline.upstreamHead(scope, headers, scope.route!.upstream, true);
    scope.finish(101, performance.now());
  }

  /** {@link UpgradeSink}: a non-101 answer is an ordinary response, counted with its status. */
  refused(req: IncomingMessage, status: number, headers: HeaderMap): void {
    const scope = (req as Scoped<IncomingMessage>)[SCOPE];
    if (scope === undefined) return;
    scope.trace?.upstreamResponded(status);
    this.d.pipeline.upstreamHead(scope, headers, scope.route!.upstream);
    headers.connection = "close";
    scope.finish(status, performance.now());
  }

  /** {@link UpgradeSink}: before any answer the socket still speaks HTTP: 502/504 on it. */
  failed(req: IncomingMessage, socket: Socket, reason: UpstreamErrorReason, upstream: string): void {
    this.d.metrics.upstreamErrors.inc({ upstream, reason });
    const scope = (req as Scoped<IncomingMessage>)[SCOPE];
    scope?.trace?.upstreamFailed(reason);
    if (scope === undefined || scope.finished || !socket.writable) {
      socket.destroy();
      return;
    }
    this.writeRaw(socket, scope, errorResponse(scope, upstreamErrorCode(reason), this.d.clock.nowMs()));
  }

  private open(id: string | string[] | undefined, method: string | undefined, version: string): RequestScope {
    const scope = new RequestScope(
      typeof id === "string" && REQUEST_ID.test(id) ? id : randomUUID(),
      method ?? "GET",
      version === "1.0" ? "1.0" : "1.1",
      performance.now(),
      this.d.runtime(),
      this.d.observers,
    );
    this.d.metrics.inflight.inc();
    return scope;
  }

  private async serve(req: IncomingMessage, res: ServerResponse, scope: RequestScope): Promise<void> {
    const outcome = await this.decide(scope, factsOf(req, false));
    if (outcome === null) return this.send(res, errorResponse(scope, "bad_gateway", this.d.clock.nowMs()));
    switch (outcome.kind) {
      case "error":
        return this.send(res, errorResponse(scope, outcome.code, this.d.clock.nowMs()));
      case "status":
        return this.send(res, jsonResponse(scope, outcome.body, this.d.clock.nowMs()));
      case "preflight":
        return this.send(res, preflightResponse(scope, this.d.clock.nowMs()));
      case "proxy":
        scope.upstreamStartMs = performance.now();
        outcome.upstream.forward(req, res, scope.method, outcome.path, outcome.headers, scope.trace);
    }
  }

  private async serveUpgrade(
    req: IncomingMessage,
    socket: Socket,
    head: Buffer,
    scope: RequestScope,
  ): Promise<void> {
    const outcome = await this.decide(scope, factsOf(req, true));
    const now = this.d.clock.nowMs();
    if (outcome === null) return this.writeRaw(socket, scope, errorResponse(scope, "bad_gateway", now));
    switch (outcome.kind) {
      case "error":
        return this.writeRaw(socket, scope, errorResponse(scope, outcome.code, now));
      case "status":
        return this.writeRaw(socket, scope, jsonResponse(scope, outcome.body, now));
      case "preflight":
        return this.writeRaw(socket, scope, preflightResponse(scope, now));
      case "proxy":
        req.url = outcome.path;
        scope.upstreamStartMs = performance.now();
        outcome.upstream.upgrade(req, socket, head, scope.trace);
    }
  }

  private async refuse(socket: Socket, scope: RequestScope, code: ErrorCode): Promise<void> {
    const outcome = await this.d.pipeline.refuse(scope, code);
    const errCode = outcome.kind === "error" ? outcome.code : code;
    this.writeRaw(socket, scope, errorResponse(scope, errCode, this.d.clock.nowMs()));
  }

  /** The core's outcome, or null when it failed unexpectedly (logged; answered 502). */
  private async decide(scope: RequestScope, facts: RequestFacts): Promise<Outcome | null> {
    try {
      return await this.d.pipeline.run(scope, facts);
    } catch (err) {
      this.d.logger.error({ err, reqId: scope.requestId }, "request pipeline failed");
      return null;
    }
  }

  /** Writes a gateway response; `close` of `res` tells the observers. */
  private send(res: ServerResponse, r: GatewayResponse): void {
    if (res.headersSent || res.destroyed) return;
    if (r.closesConnection || res.socket === null || !res.shouldKeepAlive) r.headers.connection = "close";
    res.writeHead(r.status, r.headers);
    res.end(r.body);
  }

  /** Writes a gateway response on a raw socket, closes it, and tells the observers. */
  private writeRaw(socket: Socket, scope: RequestScope, r: GatewayResponse): void {
    if (socket.writable) socket.end(serializeResponse(r));
    else socket.destroy();
    scope.finish(r.status, performance.now());
  }
}

function upstreamErrorCode(reason: UpstreamErrorReason): ErrorCode {
  return reason === "timeout" ? "gateway_timeout" : "bad_gateway";
}

/** The facts of a `node:http` request; its header object becomes the upstream request's. */
function factsOf(req: IncomingMessage, upgrade: boolean): RequestFacts {
  return {
    method: req.method ?? "GET",
    target: req.url ?? "",
    headers: req.headers,
    peerAddress: req.socket.remoteAddress ?? "",
    protocol: req.httpVersion === "1.0" ? "1.0" : "1.1",
    secure: false,
    upgrade,
    hostFields: hostFields(req.rawHeaders),
  };
}

/** Counts `Host` lines (Node keeps only the first in `headers`). */
function hostFields(raw: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 4 && name.toLowerCase() === "host") n++;
  }
  return n;
}

function ignore(): void {}

function onResponseClose(this: Scoped<ServerResponse>): void {
  this[SCOPE]?.finish(this.writableFinished ? this.statusCode : 499, performance.now());
}

/** An upgrade's client left before any answer: counted as 499. */
function onSocketClose(this: Scoped<Duplex>): void {
  this[SCOPE]?.finish(499, performance.now());
}
