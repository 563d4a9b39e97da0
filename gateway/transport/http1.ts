/**
 * The HTTP/1.1 writer: the only code that knows `node:http` requests and responses (plain, or
 * HTTP/1.1 on the TLS listener). Besides what every writer does (`writer.ts`), it relays WebSocket
 * upgrades, answers requests Node's parser refuses (bad framing 400, head timeout 408, head too
 * large 431) through the core like any other — written on the raw socket, with the rate-limit
 * fields, an access line and a metric — and is the one place that sets `Connection`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { TLSSocket } from "node:tls";
import type { ErrorCode } from "../base/error-catalog.js";
import type { HeaderMap, RequestFacts } from "../base/request-facts.js";
import { CUT, type ProxyResult } from "../core/proxy-step.js";
import { errorResponse, jsonResponse, preflightResponse, type GatewayResponse } from "../core/responses.js";
import { SCOPE, type RequestScope } from "../core/scope.js";
import type { HandshakeWriter } from "../proxy/exchange-types.js";
import { clientCertSubject } from "./client-cert.js";
import { serializeResponse } from "./raw-response.js";
import { onResponseClose, Writer, type Scoped } from "./writer.js";

/** Listeners for a `node:http` (or HTTP/1.1-on-TLS) server. */
export class Http1Transport extends Writer<ServerResponse> implements HandshakeWriter<RequestScope> {
  constructor(deps: ConstructorParameters<typeof Writer>[0]) {
    super(deps);
    this.onRequest = this.onRequest.bind(this);
    this.onUpgrade = this.onUpgrade.bind(this);
    this.onClientError = this.onClientError.bind(this);
  }

  /** `request` listener. */
  onRequest(req: Scoped<IncomingMessage>, res: Scoped<ServerResponse>): void {
    const scope = this.open(
      req.headers["x-request-id"],
      req.method,
      req.httpVersion === "1.0" ? "1.0" : "1.1",
    );
    req[SCOPE] = scope;
    res[SCOPE] = scope;
    res.on("close", onResponseClose); // emitted once; `on` skips once()'s wrapper
    const h = req.headers;
    void this.serve(
      req,
      res,
      scope,
      factsOf(req, false),
      h["content-length"] !== undefined || h["transfer-encoding"] !== undefined,
    );
  }

  /** `upgrade` listener: the handshake goes through the same core; refusals are plain HTTP. */
  onUpgrade(req: Scoped<IncomingMessage>, socket: Duplex, head: Buffer): void {
    const scope = this.open(
      req.headers["x-request-id"],
      req.method,
      req.httpVersion === "1.0" ? "1.0" : "1.1",
    );
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
    s[SCOPE] = scope;
    // The core never rejects; should it, the refusal is still answered and the scope finished.
    this.refuse(s, scope, code, s.remoteAddress ?? "").catch(() =>
      this.writeRaw(s, scope, errorResponse(scope, code, this.d.clock.nowMs())),
    );
  }

  protected send(res: ServerResponse, r: GatewayResponse): void {
    if (res.headersSent || res.destroyed) return;
    if (r.closesConnection || res.socket === null || !res.shouldKeepAlive) r.headers.connection = "close";
    res.writeHead(r.status, r.headers);
    res.end(r.body);
  }

  writeHead(res: ServerResponse, status: number, message: string, headers: HeaderMap): void {
    // The upstream's Connection and Keep-Alive fields were stripped (hop-by-hop): Node writes this
    // connection's own, `Connection: keep-alive` with `Keep-Alive: timeout=<s>` or
    // `Connection: close` (a drain clears `shouldKeepAlive`), as on the gateway's own answers.
    res.writeHead(status, message === "" ? undefined : message, headers);
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
        return this.d.pipeline.proxy.upgrade(
          scope,
          outcome,
          { req, socket, head, hashKey: outcome.hashKey },
          this,
        );
    }
  }

  /**
   * {@link HandshakeWriter}: a handshake failed before any answer; the core's 502/504 goes on the
   * raw socket now (http-proxy-3 ends it right after reporting the failure).
   */
  handshakeFailed(socket: Socket, result: ProxyResult): void {
    const answer = this.d.pipeline.proxy.answer(result);
    if (answer !== null && answer !== CUT) this.writeRaw(socket, result.context, answer);
  }

  private async refuse(socket: Socket, scope: RequestScope, code: ErrorCode, peer: string): Promise<void> {
    const outcome = await this.d.pipeline.refuse(scope, code, peer);
    const errCode = outcome.kind === "error" ? outcome.code : code;
    this.writeRaw(socket, scope, errorResponse(scope, errCode, this.d.clock.nowMs()));
  }

  /** Writes a gateway response on a raw socket, closes it, and tells the observers. */
  private writeRaw(socket: Socket, scope: RequestScope, r: GatewayResponse): void {
    if (socket.writable) socket.end(serializeResponse(r));
    else socket.destroy();
    scope.finish(r.status);
  }
}

/** The facts of a `node:http` request; its header object becomes the upstream request's. */
function factsOf(req: IncomingMessage, upgrade: boolean): RequestFacts {
  const socket = req.socket as Socket & Partial<Pick<TLSSocket, "encrypted">>;
  const secure = socket.encrypted === true;
  return {
    method: req.method ?? "GET",
    target: req.url ?? "",
    headers: req.headers,
    peerAddress: socket.remoteAddress ?? "",
    protocol: req.httpVersion === "1.0" ? "1.0" : "1.1",
    secure,
    clientCertSubject: secure ? clientCertSubject(socket as TLSSocket) : null,
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

/** An upgrade's client left before any answer: counted as 499. */
function onSocketClose(this: Scoped<Duplex>): void {
  const scope = this[SCOPE];
  scope?.finish(499);
}
