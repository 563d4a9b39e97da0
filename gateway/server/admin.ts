/**
 * The admin listener (SPEC §8): `GET /metrics` (Prometheus text), `GET /healthz` (process alive),
 * `GET /readyz` (configuration loaded and the limit store usable or failing open), `GET /upstreams`
 * (each upstream's endpoints, health, ejection and calls in flight, SPEC §16), and the usage
 * operations `/usage` and `/overrides` (SPEC §21, `usage-admin.ts`) when given a handler.
 */
import http, { type Server } from "node:http";
import type { Registry } from "prom-client";
import { isUsagePath, type AdminAnswer, type AdminCall } from "./usage-admin.js";

/** Largest request body of a usage call (bytes); 413 above. */
const MAX_BODY_BYTES = 65_536;

/** Options of {@link createAdminServer}. */
export interface AdminOptions {
  /** A gateway's registry, or a cluster primary's view of its whole group (SPEC §15). */
  registry: Pick<Registry, "metrics" | "contentType">;
  /** True when the gateway can serve (limit store answers or fails open). */
  ready(): boolean;
  /** `GET /upstreams` (SPEC §16): each upstream's balancer and endpoints, by name. */
  upstreams(): Promise<Record<string, unknown>>;
  /**
   * `/usage` and `/overrides` (SPEC §21): this gateway's handler, or a process group primary's
   * hand-over to a worker. Without it those paths answer 404.
   */
  usage?: (call: AdminCall) => Promise<AdminAnswer>;
}

/** Creates (does not bind) the admin server. */
export function createAdminServer({ registry, ready, upstreams, usage }: AdminOptions): Server {
  return http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    if (usage !== undefined && isUsagePath(path)) return usageCall(req, res, usage);
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

/** Reads the body (bounded), hands the call over, writes its JSON answer. */
function usageCall(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  usage: (call: AdminCall) => Promise<AdminAnswer>,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  req.on("data", (c: Buffer) => {
    size += c.length;
    if (size <= MAX_BODY_BYTES) chunks.push(c);
  });
  req.on("end", () => {
    if (size > MAX_BODY_BYTES) {
      res.setHeader("connection", "close");
      return send(res, 413, JSON_TYPE, '{"error":{"code":413,"message":"Payload too large"}}');
    }
    const call: AdminCall = {
      method: req.method ?? "GET",
      target: req.url ?? "/",
      authorization: req.headers.authorization,
      body: Buffer.concat(chunks).toString("utf8"),
    };
    usage(call).then(
      (a) => {
        for (const [k, v] of Object.entries(a.headers)) res.setHeader(k, v);
        send(res, a.status, JSON_TYPE, req.method === "HEAD" ? "" : a.body);
      },
      () => send(res, 500, JSON_TYPE, '{"error":{"code":500,"message":"Internal error"}}'),
    );
  });
}

const JSON_TYPE = "application/json; charset=utf-8";

function send(res: http.ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body) });
  res.end(body);
}
