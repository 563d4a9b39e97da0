/**
 * Cell (b2): a bare reverse proxy on undici 7 (`Pool` per upstream, `pipelining: 1`), the
 * candidate engine for plain HTTP named in issue 5. It does what a real engine must, so the figure
 * is honest: hop-by-hop removal both ways, `X-Forwarded-*`, request bodies streamed (`req` as the
 * body), response bodies streamed with backpressure, client aborts abort the upstream request,
 * a response-headers timeout (504) and 502 on upstream errors.
 *
 * Usage: `undici-proxy-prototype.ts <port> <upstream url> [dispatch|stream]`
 *   dispatch (default) — `pool.dispatch()` with one handler object per request (undici 7 handler API)
 *   stream             — `pool.stream()` with the response written straight into `res`
 */
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import { Pool, type Dispatcher } from "undici";

const port = Number(process.argv[2]);
const target = new URL(process.argv[3]!);
const mode = process.argv[4] === "stream" ? "stream" : "dispatch";
const TIMEOUT_MS = 30_000;

const pool = new Pool(target.origin, {
  connections: 256,
  pipelining: 1,
  keepAliveTimeout: 4_000,
  headersTimeout: TIMEOUT_MS,
  bodyTimeout: TIMEOUT_MS,
});

/** RFC 9110 §7.6.1 plus fields undici refuses or re-frames itself. */
const HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "proxy-authorization",
]);

function upstreamHeaders(req: IncomingMessage): Record<string, string | string[]> {
  const src = req.headers;
  const out: Record<string, string | string[]> = {};
  const conn = src.connection;
  const named =
    conn === undefined || conn === "keep-alive" || conn === "close"
      ? null
      : new Set(conn.split(",").map((s) => s.trim().toLowerCase()));
  for (const k in src) {
    if (HOP.has(k) || named?.has(k) === true) continue;
    const v = src[k];
    if (v !== undefined) out[k] = v;
  }
  const peer = req.socket.remoteAddress ?? "";
  const xff = src["x-forwarded-for"];
  out["x-forwarded-for"] = xff === undefined ? peer : `${xff}, ${peer}`;
  out["x-forwarded-proto"] = "http";
  if (src.host !== undefined) out["x-forwarded-host"] = src.host;
  return out;
}

function responseHeaders(src: IncomingHttpHeaders): IncomingHttpHeaders {
  for (const k of HOP) if (src[k] !== undefined) delete src[k];
  return src;
}

function hasBody(req: IncomingMessage): boolean {
  return req.headers["content-length"] !== undefined || req.headers["transfer-encoding"] !== undefined;
}

function fail(res: ServerResponse, err: Error): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const timeout = (err as { code?: string }).code === "UND_ERR_HEADERS_TIMEOUT";
  res.writeHead(timeout ? 504 : 502, { "content-type": "application/json" });
  res.end(timeout ? '{"error":"gateway timeout"}' : '{"error":"bad gateway"}');
}

/** One request's handler: holds `res` and relays undici's callbacks into it. */
class ProxyHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  constructor(private readonly res: ServerResponse) {
    res.once("close", this.onClientClose);
  }

  private readonly onClientClose = (): void => {
    if (!this.res.writableFinished) this.controller?.abort(new Error("client aborted"));
  };

  private readonly onDrain = (): void => this.controller?.resume();

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    this.res.writeHead(statusCode, responseHeaders(headers));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.res.write(chunk)) {
      controller.pause();
      this.res.once("drain", this.onDrain);
    }
  }

  onResponseEnd(): void {
    this.res.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    fail(this.res, err);
  }
}

function viaDispatch(req: IncomingMessage, res: ServerResponse): void {
  pool.dispatch(
    {
      path: req.url ?? "/",
      method: (req.method ?? "GET") as Dispatcher.HttpMethod,
      headers: upstreamHeaders(req),
      body: hasBody(req) ? req : null,
    },
    new ProxyHandler(res),
  );
}

function streamFactory({ statusCode, headers, opaque }: Dispatcher.StreamFactoryData<ServerResponse>) {
  opaque.writeHead(statusCode, responseHeaders(headers));
  return opaque;
}

function viaStream(req: IncomingMessage, res: ServerResponse): void {
  const ac = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) ac.abort();
  });
  pool.stream(
    {
      path: req.url ?? "/",
      method: (req.method ?? "GET") as Dispatcher.HttpMethod,
      headers: upstreamHeaders(req),
      body: hasBody(req) ? req : null,
      opaque: res,
      signal: ac.signal,
    },
    streamFactory,
    (err) => {
      if (err !== null) fail(res, err);
    },
  );
}

const server = http.createServer(mode === "stream" ? viaStream : viaDispatch);
server.listen(port, "127.0.0.1");
process.on("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => void pool.close().then(() => process.exit(0)));
});
