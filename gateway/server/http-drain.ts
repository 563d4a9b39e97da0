/**
 * Graceful drain of an HTTP listener: stop accepting, close idle keep-alive sockets,
 * let in-flight requests finish within a grace period, then cut whatever is left.
 *
 * `server.close()` alone is not enough (Node 20):
 * - it closes the keep-alive sockets that are idle *when it is called*; a connection whose request
 *   is in flight would answer with `Connection: keep-alive` and then sit idle (accepting new
 *   requests) until `keepAliveTimeout`. So responses not yet started are switched to
 *   `Connection: close`, and connections whose response already started are closed once it ends;
 * - upgraded (WebSocket) sockets are no longer HTTP connections: `closeAllConnections()` does not
 *   see them, yet `close()` waits for them. They are tracked here and destroyed at the deadline;
 * - HTTP/2 sessions (the TLS listener with `http2`) are told GOAWAY (`session.close()`): no new
 *   streams, in-flight streams complete; at the deadline they are destroyed.
 *
 * The TLS listener with HTTP/2 serves its HTTP/1.1 connections with Node's HTTP/1.1 code, which
 * tracks them as an `http.Server` does, so the same idle/all-connections calls apply to it.
 */
import http, { type ServerResponse } from "node:http";
import type { Http2Session } from "node:http2";
import type { Duplex } from "node:stream";
import type { ApiServer } from "../transport/api-listener.js";
import type { Milliseconds } from "../base/clock.js";

const TRACKED: unique symbol = Symbol("gateway.drain");
type TrackedResponse = ServerResponse & { [TRACKED]?: Set<ServerResponse> };
type TrackedSocket = Duplex & { [TRACKED]?: Set<Duplex> };

/** Tracks a listener's in-flight responses and upgraded sockets so that it can be drained. */
export class HttpDrain {
  private readonly server: ApiServer;
  private readonly responses = new Set<ServerResponse>();
  private readonly tunnels = new Set<Duplex>();
  private readonly sessions = new Set<Http2Session>();
  private draining = false;

  /** Installs its listeners ahead of the server's own `request`/`upgrade` handlers. */
  constructor(server: ApiServer) {
    this.server = server;
    this.onRequest = this.onRequest.bind(this);
    this.onUpgrade = this.onUpgrade.bind(this);
    server.prependListener("request", this.onRequest);
    server.prependListener("upgrade", this.onUpgrade);
    server.on("session", (session: Http2Session) => {
      this.sessions.add(session);
      session.once("close", () => this.sessions.delete(session));
      if (this.draining) session.close();
    });
  }

  /**
   * Stops accepting, closes idle keep-alive sockets at once and every other connection as soon as
   * its response is out; at `graceMs` destroys what is left (requests and upgraded sockets).
   * @param graceMs - time in-flight requests have to finish (ms)
   * @returns resolves when the listener is closed and no connection is left
   */
  drain(graceMs: Milliseconds): Promise<void> {
    this.draining = true;
    const closed = new Promise<void>((resolve) => {
      if (!this.server.listening) return resolve();
      this.server.close(() => resolve());
    });
    // http.Server#close does this itself (Node >= 19); the TLS listeners' close does not.
    closeIdleConnections(this.server);
    for (const res of this.responses) this.lastOnItsConnection(res);
    for (const session of this.sessions) session.close();
    const deadline = setTimeout(() => {
      closeAllConnections(this.server);
      for (const socket of this.tunnels) socket.destroy();
      for (const session of this.sessions) session.destroy();
    }, graceMs);
    return closed.finally(() => clearTimeout(deadline));
  }

  private onRequest(req: { httpVersionMajor: number }, res: TrackedResponse): void {
    if (req.httpVersionMajor === 2) return; // its session is drained as a whole
    if (this.draining) {
      res.shouldKeepAlive = false;
      return;
    }
    res[TRACKED] = this.responses;
    this.responses.add(res);
    res.on("close", untrackResponse); // emitted once; `on` skips once()'s wrapper
  }

  private onUpgrade(_req: unknown, socket: TrackedSocket): void {
    socket[TRACKED] = this.tunnels;
    this.tunnels.add(socket);
    socket.once("close", untrackSocket);
  }

  /** Makes `res` the last response of its connection. */
  private lastOnItsConnection(res: ServerResponse): void {
    if (!res.headersSent) {
      res.shouldKeepAlive = false;
      // An explicit header (the proxy copies one) would override shouldKeepAlive.
      if (res.hasHeader("connection")) res.setHeader("connection", "close");
      return;
    }
    // It already promised keep-alive: once it is out its connection is idle, so close that.
    res.once("finish", () => setImmediate(() => closeIdleConnections(this.server)));
  }
}

function untrackResponse(this: TrackedResponse): void {
  this[TRACKED]?.delete(this);
}

function untrackSocket(this: TrackedSocket): void {
  this[TRACKED]?.delete(this);
}

/** `http.Server#closeIdleConnections` on any API listener kind (see the module comment). */
function closeIdleConnections(server: ApiServer): void {
  http.Server.prototype.closeIdleConnections.call(server as http.Server);
}

/** `http.Server#closeAllConnections` on any API listener kind. */
function closeAllConnections(server: ApiServer): void {
  http.Server.prototype.closeAllConnections.call(server as http.Server);
}
