/**
 * Graceful drain of an HTTP listener (issue 6 §1): stop accepting, close idle keep-alive sockets,
 * let in-flight requests finish within a grace period, then cut whatever is left.
 *
 * `server.close()` alone is not enough (Node 20):
 * - it closes the keep-alive sockets that are idle *when it is called*; a connection whose request
 *   is in flight would answer with `Connection: keep-alive` and then sit idle (accepting new
 *   requests) until `keepAliveTimeout`. So responses not yet started are switched to
 *   `Connection: close`, and connections whose response already started are closed once it ends;
 * - upgraded (WebSocket) sockets are no longer HTTP connections: `closeAllConnections()` does not
 *   see them, yet `close()` waits for them. They are tracked here and destroyed at the deadline.
 */
import type { Server, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";

type Milliseconds = number;

const TRACKED: unique symbol = Symbol("gateway.drain");
type TrackedResponse = ServerResponse & { [TRACKED]?: Set<ServerResponse> };
type TrackedSocket = Duplex & { [TRACKED]?: Set<Duplex> };

/** Tracks a listener's in-flight responses and upgraded sockets so that it can be drained. */
export class HttpDrain {
  private readonly server: Server;
  private readonly responses = new Set<ServerResponse>();
  private readonly tunnels = new Set<Duplex>();
  private draining = false;

  /** Installs its listeners ahead of the server's own `request`/`upgrade` handlers. */
  constructor(server: Server) {
    this.server = server;
    this.onRequest = this.onRequest.bind(this);
    this.onUpgrade = this.onUpgrade.bind(this);
    server.prependListener("request", this.onRequest);
    server.prependListener("upgrade", this.onUpgrade);
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
      this.server.close(() => resolve()); // also closes the idle keep-alive sockets (Node >= 19)
    });
    for (const res of this.responses) this.lastOnItsConnection(res);
    const deadline = setTimeout(() => {
      this.server.closeAllConnections();
      for (const socket of this.tunnels) socket.destroy();
    }, graceMs);
    return closed.finally(() => clearTimeout(deadline));
  }

  private onRequest(_req: unknown, res: TrackedResponse): void {
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
    res.once("finish", () => setImmediate(() => this.server.closeIdleConnections()));
  }
}

function untrackResponse(this: TrackedResponse): void {
  this[TRACKED]?.delete(this);
}

function untrackSocket(this: TrackedSocket): void {
  this[TRACKED]?.delete(this);
}
