/**
 * The decision listener (SPEC §23): plain HTTP/1.1 on `decision.listen`, for the edge proxy alone.
 * Its requests go to the decision transport; the parser's limits and timeouts are the API
 * listener's (`listen.*`), since the edge proxy passes the client's header fields on.
 */
import http, { type Server } from "node:http";
import type { GatewayConfig } from "../config/schema.js";
import type { DecisionTransport } from "./decision.js";

/** Creates the decision listener with its transport attached (not yet bound). */
export function createDecisionListener(config: GatewayConfig, transport: DecisionTransport): Server {
  const l = config.listen;
  const server = http.createServer({
    headersTimeout: l.headers_timeout_ms,
    requestTimeout: l.request_timeout_ms,
    keepAliveTimeout: l.keep_alive_timeout_ms,
    maxHeaderSize: l.max_header_bytes,
    requireHostHeader: false,
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(l.headers_timeout_ms / 4))),
  });
  server.on("request", transport.onRequest);
  return server;
}
