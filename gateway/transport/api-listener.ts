/**
 * The API listener (SPEC §7, §12): plain HTTP/1.1, HTTP/1.1 over TLS, or TLS with ALPN offering
 * `h2` and `http/1.1` — one server, whose requests go to the writer of their protocol.
 *
 * HTTP/2 bounds (RFC 9113, and the floods of 2023–2024): at most `listen.http2_max_streams`
 * concurrent streams per connection and `listen.max_header_bytes` of header list; a connection that
 * resets streams faster than 33/s after a burst of 1000 is closed with GOAWAY (rapid reset,
 * CVE-2023-44487: Node's `streamResetBurst` / `streamResetRate`); CONTINUATION floods
 * (CVE-2024-27983) and invalid-frame floods end the session (`maxSessionInvalidFrames`).
 */
import http, { type Server } from "node:http";
import http2, { type Http2SecureServer, type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { GatewayConfig } from "../config/schema.js";
import type { Http1Transport } from "./http1.js";
import type { Http2Transport } from "./http2.js";
import type { ServerTls } from "./server-tls.js";

/** The API listener, whichever kind the configuration asks for. */
export type ApiServer = Server | https.Server | Http2SecureServer;

/**
 * Creates the API listener with its writers attached.
 * @param tls - `listen.tls` read from its files, or null for plain HTTP/1.1
 */
export function createApiListener(
  config: GatewayConfig,
  tls: ServerTls | null,
  h1: Http1Transport,
  h2: Http2Transport,
): ApiServer {
  const l = config.listen;
  const http1Options = {
    headersTimeout: l.headers_timeout_ms,
    requestTimeout: l.request_timeout_ms,
    keepAliveTimeout: l.keep_alive_timeout_ms,
    maxHeaderSize: l.max_header_bytes,
    // The core answers a missing or repeated Host itself (400 with the rate-limit fields).
    requireHostHeader: false,
    // Node enforces both timeouts only on this sweep (default every 30 s): without it a slowloris
    // client holds its socket up to 30 s past headers_timeout_ms.
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(l.headers_timeout_ms / 4))),
  };
  let server: ApiServer;
  if (tls === null) {
    server = http.createServer(http1Options);
    server.on("request", h1.onRequest);
  } else if (!l.http2) {
    server = https.createServer({ ...http1Options, ...tls, ALPNProtocols: ["http/1.1"] });
    server.on("request", h1.onRequest);
  } else {
    const s = http2.createSecureServer({
      ...tls,
      allowHTTP1: true,
      maxSessionInvalidFrames: 100,
      maxSessionRejectedStreams: 100,
      streamResetBurst: 1000,
      streamResetRate: 33,
      settings: { maxConcurrentStreams: l.http2_max_streams, maxHeaderListSize: l.max_header_bytes },
      maxSendHeaderBlockLength: l.max_header_bytes * 4,
    } as http2.SecureServerOptions);
    // HTTP/1.1 connections on this server are served by Node's HTTP/1.1 code, with these settings.
    Object.assign(s, http1Options);
    s.on(
      "request",
      (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => {
        if (req.httpVersionMajor === 2) h2.onRequest(req as Http2ServerRequest, res as Http2ServerResponse);
        else h1.onRequest(req as IncomingMessage, res as ServerResponse);
      },
    );
    server = s;
  }
  server.on("upgrade", h1.onUpgrade);
  server.on("clientError", h1.onClientError);
  return server;
}
