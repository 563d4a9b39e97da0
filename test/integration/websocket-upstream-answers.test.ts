/**
 * What the upstream answers to a WebSocket handshake: a non-101 answer is an ordinary
 * response (hop-by-hop fields removed, the gateway's fields added, counted with its own status,
 * not as 101); an upstream that refuses the connection is a 502 in the catalogue's shape; and
 * `connect_timeout_ms` watches the upstream socket, so a dark upstream is a 502 after it rather
 * than a 504 after `timeout_ms`.
 */
import type { IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { createLogger } from "../../gateway/observability/logger.js";
import { startBlackhole, type Blackhole } from "../helpers/blackhole.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen } from "../helpers/http.js";
import { logLines, type LogLines } from "../helpers/log-lines.js";
import { scrape } from "../helpers/prom.js";

const CONNECT_TIMEOUT_MS = 300;
const RESPONSE_TIMEOUT_MS = 5000;
let upstream: Awaited<ReturnType<typeof listen>>;
let blackhole: Blackhole;
let gw: TestGateway;
let log: LogLines;

beforeAll(async () => {
  // No `upgrade` listener: Node hands handshakes to the request handler, which refuses them.
  upstream = await listen((_req, res) => {
    res.writeHead(403, {
      "content-type": "text/plain",
      connection: "x-secret-hop",
      "x-secret-hop": "1",
      "keep-alive": "timeout=5",
      "x-ratelimit-limit": "999999",
      "x-upstream": "kept",
    });
    res.end("no sockets here");
  });
  blackhole = await startBlackhole();
  log = logLines();
  gw = await startGateway(
    testConfig(upstream.url, {
      upstreams: {
        docs: { url: upstream.url },
        dead: { url: "http://127.0.0.1:1" },
        dark: {
          url: `http://127.0.0.1:${blackhole.port}`,
          connect_timeout_ms: CONNECT_TIMEOUT_MS,
          timeout_ms: RESPONSE_TIMEOUT_MS,
        },
      },
      routes: [
        { prefix: "/v1", upstream: "docs" },
        { prefix: "/dead", upstream: "dead" },
        { prefix: "/dark", upstream: "dark" },
      ],
    }),
    { logger: createLogger("info", log.destination) },
  );
});

afterAll(async () => {
  await gw?.close();
  if (upstream !== undefined) await closeServer(upstream.server);
  blackhole?.close();
});

/** The HTTP answer to a handshake the upstream side did not accept. */
function refusedHandshake(path: string): Promise<{ res: IncomingMessage; body: string; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${gw.url.replace(/^http/, "ws")}${path}`, {
      headers: { authorization: "Bearer valid-token" },
    });
    ws.once("open", () => reject(new Error("the handshake should not succeed")));
    ws.once("unexpected-response", (_req, res: IncomingMessage) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ res, body, ms: performance.now() - t0 }));
    });
    ws.once("error", () => {});
  });
}

describe("a WebSocket handshake the upstream does not accept", () => {
  it("relays a non-101 answer without its hop-by-hop fields, with the gateway's, counted as its status", async () => {
    const { res, body } = await refusedHandshake("/v1/socket");
    expect(res.statusCode).toBe(403);
    expect(body).toBe("no sockets here");
    expect(res.headers["x-upstream"]).toBe("kept");
    expect(res.headers["x-secret-hop"]).toBeUndefined();
    expect(res.headers["keep-alive"]).toBeUndefined();
    expect(res.headers["x-ratelimit-resource"]).toBe("read");
    expect(res.headers["x-ratelimit-limit"]).toBe("100");
    const requestId = res.headers["x-request-id"] as string;
    const line = await log.waitFor((l) => l.reqId === requestId);
    expect(line).toMatchObject({ status: 403, route: "/v1", class: "read" });
    const m = await scrape(gw.adminUrl);
    expect(m.value("gateway_requests_total", { route: "/v1", class: "read", code: "403" })).toBe(1);
    expect(m.value("gateway_requests_total", { route: "/v1", class: "read", code: "101" })).toBe(0);
  });

  it("answers 502 in the catalogue's shape when the upstream refuses the connection", async () => {
    const { res, body } = await refusedHandshake("/dead/socket");
    expect(res.statusCode).toBe(502);
    expect(JSON.parse(body)).toEqual({ error: { code: 502, message: "Bad gateway" } });
    expect(res.headers["x-ratelimit-remaining"]).toMatch(/^\d+$/);
    const m = await scrape(gw.adminUrl);
    expect(m.value("gateway_upstream_errors_total", { upstream: "dead", reason: "connect" })).toBe(1);
    expect(m.value("gateway_requests_total", { route: "/dead", class: "read", code: "502" })).toBe(1);
  });

  it("applies connect_timeout_ms to the upstream socket (502), not timeout_ms (504)", async () => {
    const { res, ms } = await refusedHandshake("/dark/socket");
    expect(res.statusCode).toBe(502);
    expect(ms).toBeLessThan(RESPONSE_TIMEOUT_MS);
    const m = await scrape(gw.adminUrl);
    expect(m.value("gateway_upstream_errors_total", { upstream: "dark", reason: "connect" })).toBe(1);
  });
});
