/**
 * The HTTP/2 writer (RFC 9113): the only code that knows `node:http2` requests and responses. Every
 * part of the request path holds as over HTTP/1.1 (the core is the same); what differs is the
 * framing: the facts come from pseudo-headers (`:authority` becomes the upstream's `Host`), a body
 * is announced by a HEADERS frame without END_STREAM, responses carry no connection-specific field
 * (RFC 9113 §8.2.2) and no reason phrase, and a client's RST_STREAM closes the response, which
 * aborts the upstream request.
 */
import http2, { type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import type { TLSSocket } from "node:tls";
import type { HeaderMap, RequestFacts } from "../base/request-facts.js";
import type { GatewayResponse } from "../core/responses.js";
import { SCOPE } from "../core/scope.js";
import { clientCertSubject } from "./client-cert.js";
import { Writer, type Scoped } from "./writer.js";

/** The `request` listener for HTTP/2 streams of the TLS listener. */
export class Http2Transport extends Writer<Http2ServerResponse> {
  constructor(deps: ConstructorParameters<typeof Writer>[0]) {
    super(deps);
    this.onRequest = this.onRequest.bind(this);
  }

  /** Serves one stream (compatibility API objects). */
  onRequest(req: Scoped<Http2ServerRequest>, res: Scoped<Http2ServerResponse>): void {
    const scope = this.open(req.headers["x-request-id"], req.method, "2");
    req[SCOPE] = scope;
    res[SCOPE] = scope;
    res.on("close", onStreamClose);
    void this.serve(req, res, scope, factsOf(req), !req.stream.endAfterHeaders);
  }

  protected send(res: Http2ServerResponse, r: GatewayResponse): void {
    if (res.headersSent || res.stream.destroyed) return;
    res.writeHead(r.status, r.headers);
    res.end(r.body);
  }

  writeHead(res: Http2ServerResponse, status: number, _message: string, headers: HeaderMap): void {
    // The core removed the hop-by-hop fields (RFC 9110 §7.6.1), which are the connection-specific
    // ones HTTP/2 forbids.
    res.writeHead(status, headers);
  }
}

/** The facts of an HTTP/2 request: its regular fields, with `:authority` as `Host`. */
function factsOf(req: Http2ServerRequest): RequestFacts {
  const headers: HeaderMap = {};
  const raw = req.headers;
  for (const name in raw) if (name.charCodeAt(0) !== 58 /* ":" */) headers[name] = raw[name];
  const authority = req.authority;
  if (authority !== undefined && authority !== "") headers.host = authority;
  const socket = req.stream.session?.socket as TLSSocket | undefined;
  return {
    method: req.method,
    target: req.url ?? "",
    headers,
    peerAddress: socket?.remoteAddress ?? "",
    protocol: "2",
    secure: true,
    clientCertSubject: socket === undefined ? null : clientCertSubject(socket),
    upgrade: false,
    hostFields: 1,
  };
}

/**
 * `close` listener of an HTTP/2 response: the observers are told, with 499 when the client reset
 * the stream first (a reset stream reports itself `writableFinished`; its `rstCode` tells).
 */
function onStreamClose(this: Scoped<Http2ServerResponse>): void {
  const completed = this.writableFinished && this.stream.rstCode === http2.constants.NGHTTP2_NO_ERROR;
  const scope = this[SCOPE];
  scope?.finish(completed ? this.statusCode : 499);
}
