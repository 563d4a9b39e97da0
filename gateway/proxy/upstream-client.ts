/**
 * One client per upstream (undici's `Pool`, Envoy's cluster): it owns the connection pool, the TLS
 * settings and the timeouts of one `upstreams.<name>` entry, and everything that talks to that
 * upstream goes through it — plain requests on undici, WebSocket upgrades on http-proxy-3 with a
 * keep-alive agent built from the same settings, and the CLIENT span of each (SPEC §13).
 */
import http from "node:http";
import https from "node:https";
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { Pool, type Dispatcher } from "undici";
import type { GatewayConfig } from "../config/schema.js";
import { Forward } from "./forward.js";
import type { HeaderMap } from "../facts.js";
import type { RequestTrace } from "../observability/tracing/request-trace.js";
import type { ProxyRequest, ResponseTarget, UpstreamSink } from "./sink.js";
import type { UpstreamTls } from "./upstream-tls.js";
import { WebSocketRelay, type UpgradeSink } from "./websocket.js";

type UpstreamConfig = GatewayConfig["upstreams"][string];

/** A proxied upstream. */
export class UpstreamClient {
  readonly name: string;
  private readonly pool: Pool;
  private readonly agent: http.Agent;
  private readonly ws: WebSocketRelay;
  /** The upstream URL's path without its trailing slash ("" for the root). */
  private readonly basePath: string;
  /** `server.address` and `server.port` of the CLIENT spans. */
  private readonly address: string;
  private readonly port: number;

  /**
   * @param name - the upstream's config name (metrics label)
   * @param cfg - `upstreams.<name>`: url, timeout_ms (silence before and during the body, ms),
   *   connect_timeout_ms (ms), max_sockets (pool connections), keep_alive_ms (idle pooled socket, ms)
   * @param tls - the upstream's TLS settings (`https://` upstreams), or null
   * @param upgradeSink - the HTTP/1.1 writer, which relays WebSocket upgrades
   */
  constructor(name: string, cfg: UpstreamConfig, tls: UpstreamTls | null, upgradeSink: UpgradeSink) {
    this.name = name;
    const url = new URL(cfg.url);
    this.basePath = url.pathname.replace(/\/+$/, "");
    this.address = url.hostname.replace(/^\[|\]$/g, "");
    this.port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
    this.pool = new Pool(url.origin, {
      connections: cfg.max_sockets,
      pipelining: 1,
      keepAliveTimeout: cfg.keep_alive_ms,
      // An upstream's `Keep-Alive: timeout=N` may shorten, never lengthen, the configured idle time.
      keepAliveMaxTimeout: cfg.keep_alive_ms,
      headersTimeout: cfg.timeout_ms,
      bodyTimeout: cfg.timeout_ms,
      connect: { timeout: cfg.connect_timeout_ms, ...tls },
    });
    const agentOptions = {
      keepAlive: true,
      maxSockets: cfg.max_sockets,
      maxFreeSockets: Math.min(cfg.max_sockets, 64),
      timeout: cfg.keep_alive_ms,
      scheduling: "lifo" as const,
    };
    this.agent = tls === null ? new http.Agent(agentOptions) : new https.Agent({ ...agentOptions, ...tls });
    this.ws = new WebSocketRelay(
      name,
      cfg.url,
      this.agent,
      tls?.rejectUnauthorized ?? true,
      { timeoutMs: cfg.timeout_ms, connectTimeoutMs: cfg.connect_timeout_ms },
      upgradeSink,
    );
  }

  /**
   * Forwards a plain request, streaming both bodies.
   * @param path - path and query to send (appended to the upstream URL's path)
   * @param headers - the prepared upstream request headers (hop-by-hop and `expect` removed)
   * @param hasBody - the request has a body to stream (HTTP/1.1: a length or chunked framing;
   *   HTTP/2: the HEADERS frame did not end the stream)
   * @param sink - the writer of the transport that received the request
   * @param trace - the request's spans: a CLIENT span is started and its `traceparent` sent
   */
  forward(
    req: ProxyRequest,
    res: ResponseTarget,
    method: string,
    path: string,
    headers: HeaderMap,
    hasBody: boolean,
    sink: UpstreamSink,
    trace: RequestTrace | null = null,
  ): void {
    // undici frames the body itself and refuses the field.
    if (headers["transfer-encoding"] !== undefined) delete headers["transfer-encoding"];
    trace?.startUpstream(method, this.address, this.port, headers);
    this.pool.dispatch(
      {
        path: this.basePath + path,
        method: method as Dispatcher.HttpMethod,
        headers,
        body: hasBody ? req : null,
      },
      new Forward(this.name, sink, req, res, trace),
    );
  }

  /**
   * Forwards a WebSocket handshake (`req.url` and `req.headers` prepared) and then pipes both ways.
   * The CLIENT span is ended by the transport's {@link UpgradeSink} callbacks.
   */
  upgrade(req: IncomingMessage, socket: Socket, head: Buffer, trace: RequestTrace | null = null): void {
    trace?.startUpstream(req.method ?? "GET", this.address, this.port, req.headers);
    this.ws.relay(req, socket, head);
  }

  /** Closes pooled sockets (and aborts what still runs on them). */
  close(): void {
    this.agent.destroy();
    this.pool.destroy().catch(ignore);
  }
}

function ignore(): void {}
