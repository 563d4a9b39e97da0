/**
 * The admin listener (SPEC §8): `GET /metrics` (Prometheus text), `GET /healthz` (process alive),
 * `GET /readyz` (configuration loaded and the limit store usable or failing open), `GET /upstreams`
 * (each upstream's endpoints, health, ejection and calls in flight, SPEC §16).
 */
import http, { type Server } from "node:http";
import type { Registry } from "prom-client";

/** Options of {@link createAdminServer}. */
export interface AdminOptions {
  /** A gateway's registry, or a cluster primary's view of its whole group (SPEC §15). */
  registry: Pick<Registry, "metrics" | "contentType">;
  /** True when the gateway can serve (limit store answers or fails open). */
  ready(): boolean;
  /** `GET /upstreams` (SPEC §16): each upstream's balancer and endpoints, by name. */
  upstreams(): Promise<Record<string, unknown>>;
  /** Extra routes (SPEC §21 `/usage/top`): each handles its path and returns true, else false. */
  routes?: readonly ((req: http.IncomingMessage, res: http.ServerResponse) => boolean)[];
}

/** Creates (does not bind) the admin server. */
export function createAdminServer({ registry, ready, upstreams, routes = [] }: AdminOptions): Server {
  return http.createServer((req, res) => {
    for (const route of routes) if (route(req, res)) return;
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" && req.method !== "HEAD")
      return send(res, 405, "text/plain", "method not allowed\n");
    switch (path) {
      case "/healthz":
        return send(res, 200, "application/json", '{"status":"ok"}');
      case "/readyz":
        return ready()
          ? send(res, 200, "application/json", '{"status":"ready"}')
          : send(res, 503, "application/json", '{"status":"not ready"}');
      case "/metrics":
        registry.metrics().then(
          (text) => send(res, 200, registry.contentType, text),
          () => send(res, 500, "text/plain", "metrics collection failed\n"),
        );
        return;
      case "/upstreams":
        upstreams().then(
          (u) => send(res, 200, "application/json", JSON.stringify({ upstreams: u })),
          () => send(res, 500, "text/plain", "upstream state unavailable\n"),
        );
        return;
      default:
        return send(res, 404, "text/plain", "not found\n");
    }
  });
}

function send(res: http.ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body) });
  res.end(body);
}
