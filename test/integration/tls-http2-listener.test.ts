/**
 * TLS and HTTP/2 on the API listener (SPEC §12), with real certificates made per run and
 * real HTTP/2 clients (node:http2 and `curl --http2`): every part of the request path holds over h2
 * — authentication, limits, the headers, the error catalogue, GET /rate_limit, streaming both ways,
 * RST_STREAM aborting the upstream request, the access line's protocol, metrics — with no
 * connection-specific field on an h2 response and `:authority` as the upstream's Host; HTTP/1.1 on
 * the same listener; X-Forwarded-Proto https.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { once } from "node:events";
import http2 from "node:http2";
import https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../gateway/observability/logger.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { h2connect, h2request } from "../helpers/h2.js";
import { closeServer, listen } from "../helpers/http.js";
import { logLines, type LogLines } from "../helpers/log-lines.js";
import { scrape } from "../helpers/prom.js";
import { createPki, type TestPki } from "../helpers/tls.js";

let pki: TestPki;
let upstream: Awaited<ReturnType<typeof listen>>;
let gw: TestGateway;
let origin: string;
let log: LogLines;
/** Requests the upstream is holding open, their responses, and whether each was aborted. */
const held: { req: IncomingMessage; res: ServerResponse; aborted: Promise<void> }[] = [];
const AUTH = { authorization: "Bearer valid-token" };

beforeAll(async () => {
  pki = createPki();
  upstream = await listen((req, res) => {
    if (req.url === "/v1/hold") {
      req.on("error", () => {});
      // The response's close, not the request's: a GET's request closes once read, aborted or not.
      held.push({ req, res, aborted: new Promise<void>((resolve) => res.on("close", () => resolve())) });
      return;
    }
    if (req.url === "/v1/download") {
      res.writeHead(200, {
        "content-type": "application/octet-stream",
        connection: "keep-alive",
        "keep-alive": "timeout=5",
      });
      for (let i = 0; i < 64; i++) res.write(Buffer.alloc(16_384, i));
      res.end();
      return;
    }
    let size = 0;
    req.on("data", (c: Buffer) => (size += c.length));
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
      res.end(
        JSON.stringify({
          method: req.method,
          url: req.url,
          size,
          host: req.headers.host,
          proto: req.headers["x-forwarded-proto"],
          forwardedHost: req.headers["x-forwarded-host"],
          certSubject: req.headers["x-client-cert-subject"] ?? null,
        }),
      );
    });
  });
  log = logLines();
  gw = await startGateway(
    testConfig(upstream.url, {
      listen: {
        host: "127.0.0.1",
        port: 0,
        grace_ms: 2000,
        tls: { cert_file: pki.serverCertFile, key_file: pki.serverKeyFile },
      },
      rate_limits: {
        classes: {
          limited: { match: { paths: ["/v1/limited"] }, windows: [{ limit: 1, window_s: 3600 }] },
          read: { windows: [{ limit: 1000, window_s: 3600 }] },
        },
      },
    }),
    { logger: createLogger("info", log.destination) },
  );
  origin = `https://localhost:${gw.apiPort}`;
});

afterAll(async () => {
  await gw?.close();
  for (const h of held) h.req.socket.destroy();
  if (upstream !== undefined) await closeServer(upstream.server);
  pki?.remove();
});

const CONNECTION_SPECIFIC = ["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection"];

describe("HTTP/2 on the TLS listener", () => {
  it("proxies with the rate-limit headers, :authority as Host, https as X-Forwarded-Proto, no connection fields", async () => {
    const session = await h2connect(origin, { ca: pki.ca });
    const res = await h2request(session, { ":path": "/v1/user?q=1", ...AUTH });
    session.close();
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({
      url: "/v1/user?q=1",
      host: `localhost:${gw.apiPort}`,
      forwardedHost: `localhost:${gw.apiPort}`,
      proto: "https",
      certSubject: null,
    });
    expect(res.headers["x-ratelimit-limit"]).toBe("1000");
    expect(res.headers["x-ratelimit-resource"]).toBe("read");
    for (const h of CONNECTION_SPECIFIC) expect(res.headers[h], h).toBeUndefined();
    const line = await log.waitFor((l) => l.reqId === res.headers["x-request-id"]);
    expect(line).toMatchObject({ protocol: "2", status: 200, class: "read" });
  });

  it("answers the catalogue's 401 and 429 and GET /rate_limit over h2", async () => {
    const session = await h2connect(origin, { ca: pki.ca });
    const unauthenticated = await h2request(session, { ":path": "/v1/user" });
    expect(unauthenticated.status).toBe(401);
    expect(JSON.parse(unauthenticated.body)).toEqual({
      error: { code: 401, message: "Authentication required" },
    });
    expect(unauthenticated.headers["www-authenticate"]).toBe('Bearer realm="api"');
    expect(unauthenticated.headers["x-ratelimit-resource"]).toBe("anonymous");
    await h2request(session, { ":path": "/v1/limited", ...AUTH });
    const limited = await h2request(session, { ":path": "/v1/limited", ...AUTH });
    expect(limited.status).toBe(429);
    expect(limited.headers["retry-after"]).toMatch(/^\d+$/);
    const status = await h2request(session, { ":path": "/rate_limit", ...AUTH });
    expect(status.status).toBe(200);
    expect(JSON.parse(status.body).resources.limited).toMatchObject({ limit: 1, remaining: 0 });
    for (const r of [unauthenticated, limited, status]) {
      for (const h of CONNECTION_SPECIFIC) expect(r.headers[h], h).toBeUndefined();
    }
    session.close();
  });

  it("streams a 1 MiB upload and a 1 MiB download", async () => {
    const session = await h2connect(origin, { ca: pki.ca });
    const up = await h2request(
      session,
      { ":path": "/v1/upload", ":method": "POST", ...AUTH },
      Buffer.alloc(1 << 20, 7),
    );
    expect(JSON.parse(up.body)).toMatchObject({ method: "POST", size: 1 << 20 });
    const down = await new Promise<number>((resolve, reject) => {
      const stream = session.request({ ":path": "/v1/download", ...AUTH });
      let size = 0;
      stream.on("data", (c: Buffer) => (size += c.length));
      stream.on("end", () => resolve(size));
      stream.on("error", reject);
    });
    expect(down).toBe(64 * 16_384);
    session.close();
  });

  it("aborts the upstream request when the client resets the stream", async () => {
    const session = await h2connect(origin, { ca: pki.ca });
    const before = held.length;
    const stream = session.request({ ":path": "/v1/hold", ...AUTH });
    stream.on("error", () => {});
    while (held.length === before) await once(upstream.server, "request");
    stream.close(http2.constants.NGHTTP2_CANCEL);
    await held[before]!.aborted; // the upstream sees its request go away
    session.close();
    // Gone before its response was written, and logged as the client's abort over h2.
    expect(held[before]!.res.writableFinished).toBe(false);
    const line = await log.waitFor((l) => l.path === "/v1/hold");
    expect(line).toMatchObject({ status: 499, aborted: true, protocol: "2" });
  });

  it("serves curl --http2", async () => {
    // Asynchronously: the gateway under test runs in this process.
    const { stdout: out } = await promisify(execFile)(
      "curl",
      [
        "--http2",
        "-sS",
        "--cacert",
        pki.caFile,
        "-D",
        "-",
        "-H",
        "Authorization: Bearer valid-token",
        `${origin}/v1/user`,
      ],
      { encoding: "utf8", timeout: 10_000 },
    );
    expect(out).toMatch(/^HTTP\/2 200/);
    expect(out).toMatch(/^x-ratelimit-remaining: \d+\r$/m);
    expect(out).not.toMatch(/^connection:/im);
  });

  it("counts h2 requests in the request metrics", async () => {
    const m = await scrape(gw.adminUrl);
    expect(
      m.value("gateway_requests_total", { route: "/v1", class: "read", code: "200" }),
    ).toBeGreaterThanOrEqual(3);
  });
});

describe("HTTP/1.1 on the same TLS listener", () => {
  it("proxies with X-Forwarded-Proto https and logs protocol 1.1", async () => {
    const res = await new Promise<{ status: number; body: string; headers: Record<string, unknown> }>(
      (resolve, reject) => {
        const req = https.get(
          `${origin}/v1/user`,
          { ca: pki.ca, headers: AUTH, ALPNProtocols: ["http/1.1"] } as https.RequestOptions,
          (r) => {
            let body = "";
            r.setEncoding("utf8").on("data", (c: string) => (body += c));
            r.on("end", () => resolve({ status: r.statusCode!, body, headers: r.headers }));
          },
        );
        req.on("error", reject);
      },
    );
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ proto: "https", host: `localhost:${gw.apiPort}` });
    const line = await log.waitFor((l) => l.reqId === res.headers["x-request-id"]);
    expect(line.protocol).toBe("1.1");
  });
});
