/**
 * Every timeout is configurable and does what the config reference says.
 *
 * Upstream side: `connect_timeout_ms` (502), `timeout_ms` before the response head (504) and while
 * the body is silent (the stream is cut), `keep_alive_ms` (pooled sockets closed). Client side:
 * `headers_timeout_ms` (slowloris: 408 then close) and `keep_alive_timeout_ms` (idle sockets closed).
 */
import { once } from "node:events";
import http, { type IncomingMessage, type Server, type ServerResponse } from "node:http";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBlackhole, type Blackhole } from "../helpers/blackhole.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";

const CONNECT_TIMEOUT_MS = 300;
const RESPONSE_TIMEOUT_MS = 400;
const UPSTREAM_IDLE_MS = 300;
const HEADERS_TIMEOUT_MS = 500;
const KEEP_ALIVE_TIMEOUT_MS = 300;
/** Scheduling slack on a loaded 2-core CI machine. */
const SLACK_MS = 1500;
const AUTH = { authorization: "Bearer valid-token" };

let upstream: { server: Server; url: string };
let blackhole: Blackhole;
let gw: TestGateway;
const stalled: ServerResponse[] = [];
/** Upstream connections the gateway opened, and when each closed. */
const upstreamSockets: { socket: net.Socket; closedAt: Promise<number> }[] = [];

beforeAll(async () => {
  blackhole = await startBlackhole();
  upstream = await listen((req: IncomingMessage, res: ServerResponse) => {
    if (req.url === "/v1/never") return void stalled.push(res);
    if (req.url === "/v1/stall-mid-body") {
      res.writeHead(200, { "content-type": "text/plain", "content-length": 1000 });
      res.write("x".repeat(100));
      return void stalled.push(res);
    }
    res.writeHead(200, { "content-type": "text/plain", "content-length": 2 });
    res.end("ok");
  });
  upstream.server.on("connection", (socket: net.Socket) => {
    const t = performance.now();
    upstreamSockets.push({ socket, closedAt: once(socket, "close").then(() => performance.now() - t) });
  });
  gw = await startGateway(gatewayConfig());
});

/** Upstreams `docs` and `dark` (never accepts), and the client-side timeouts. */
function gatewayConfig(): Record<string, unknown> {
  return testConfig(upstream.url, {
    listen: {
      host: "127.0.0.1",
      port: 0,
      grace_ms: 1000,
      headers_timeout_ms: HEADERS_TIMEOUT_MS,
      request_timeout_ms: 10_000,
      keep_alive_timeout_ms: KEEP_ALIVE_TIMEOUT_MS,
    },
    upstreams: {
      docs: { url: upstream.url, timeout_ms: RESPONSE_TIMEOUT_MS, keep_alive_ms: UPSTREAM_IDLE_MS },
      dark: { url: `http://127.0.0.1:${blackhole.port}`, connect_timeout_ms: CONNECT_TIMEOUT_MS },
    },
    routes: [
      { prefix: "/v1", upstream: "docs" },
      { prefix: "/dark", upstream: "dark" },
    ],
  });
}

afterAll(async () => {
  await gw?.close();
  for (const res of stalled) res.destroy();
  if (upstream !== undefined) await closeServer(upstream.server);
  blackhole?.close();
});

async function timed<T>(work: Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const value = await work;
  return [value, performance.now() - t0];
}

describe("upstream timeouts", () => {
  let egw: TestGateway;

  beforeAll(async () => {
    egw = gw;
  });

  afterAll(async () => {
    if (egw !== gw) await egw.close();
  });

  it("answers 502 when the upstream does not accept the connection within connect_timeout_ms", async () => {
    const [res, ms] = await timed(request(`${egw.url}/dark/x`, { headers: AUTH }));
    expect(res.status).toBe(502);
    expect(JSON.parse(res.body)).toEqual({ error: { code: 502, message: "Bad gateway" } });
    expect(res.headers["x-ratelimit-limit"]).toBeDefined();
    expect(ms).toBeGreaterThanOrEqual(CONNECT_TIMEOUT_MS - 20);
    expect(ms).toBeLessThan(CONNECT_TIMEOUT_MS + SLACK_MS);
    const metrics = await request(`${egw.adminUrl}/metrics`);
    expect(metrics.body).toMatch(
      /gateway_upstream_errors_total\{[^}]*upstream="dark"[^}]*reason="connect"[^}]*\} 1/,
    );
  });

  it("answers 504 when the upstream does not start its response within timeout_ms", async () => {
    const [res, ms] = await timed(request(`${egw.url}/v1/never`, { headers: AUTH }));
    expect(res.status).toBe(504);
    expect(JSON.parse(res.body)).toEqual({ error: { code: 504, message: "Gateway timeout" } });
    expect(ms).toBeGreaterThanOrEqual(RESPONSE_TIMEOUT_MS - 20);
    expect(ms).toBeLessThan(RESPONSE_TIMEOUT_MS + SLACK_MS);
  });

  it("cuts a response whose body stays silent for timeout_ms (never a short body that looks complete)", async () => {
    const t0 = performance.now();
    const outcome = await new Promise<string>((resolve) => {
      http.get(`${egw.url}/v1/stall-mid-body`, { headers: AUTH, agent: false }, (res) => {
        let n = 0;
        res.on("data", (c: Buffer) => (n += c.length));
        res.on("end", () => resolve(`ended after ${n} bytes`));
        res.on("error", (err: NodeJS.ErrnoException) =>
          resolve(`${err.code ?? err.message} after ${n} bytes`),
        );
      });
    });
    const ms = performance.now() - t0;
    expect(outcome).toBe("ECONNRESET after 100 bytes");
    expect(ms).toBeGreaterThanOrEqual(RESPONSE_TIMEOUT_MS - 20);
    expect(ms).toBeLessThan(RESPONSE_TIMEOUT_MS + SLACK_MS);
  });

  it("closes pooled upstream sockets idle for keep_alive_ms", async () => {
    const before = upstreamSockets.length;
    expect((await request(`${egw.url}/v1/pool`, { headers: AUTH })).status).toBe(200);
    const opened = upstreamSockets.slice(before);
    expect(opened.length).toBe(1);
    const aliveMs = await opened[0]!.closedAt;
    expect(aliveMs).toBeGreaterThanOrEqual(UPSTREAM_IDLE_MS - 20);
    expect(aliveMs).toBeLessThan(UPSTREAM_IDLE_MS + SLACK_MS);
  });
});

describe("client timeouts", () => {
  it("answers 408 and closes a connection whose headers trickle in slower than headers_timeout_ms", async () => {
    const socket = net.connect(gw.apiPort, "127.0.0.1");
    await once(socket, "connect");
    const t0 = performance.now();
    let received = "";
    socket.setEncoding("latin1").on("data", (c: string) => (received += c));
    socket.on("error", () => {});
    // A slowloris client: a valid request line, then one header byte every 50 ms, forever.
    socket.write("GET /v1/slow HTTP/1.1\r\nHost: gw\r\nX-Drip: ");
    const drip = setInterval(() => socket.writable && socket.write("a"), 50);
    await once(socket, "close");
    clearInterval(drip);
    const ms = performance.now() - t0;
    expect(received).toMatch(/^HTTP\/1.1 408 /);
    expect(received).toMatch(/"code":408/);
    expect(ms).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 20);
    expect(ms).toBeLessThan(HEADERS_TIMEOUT_MS + SLACK_MS);
  });

  it("closes a client keep-alive connection idle for keep_alive_timeout_ms", async () => {
    const socket = net.connect(gw.apiPort, "127.0.0.1");
    socket.on("error", () => {});
    await once(socket, "connect");
    let received = "";
    socket.setEncoding("latin1");
    const answered = new Promise<number>((resolve) =>
      socket.on("data", (c: string) => {
        received += c;
        if (/\r\n\r\nok$/.test(received)) resolve(performance.now());
      }),
    );
    socket.write("GET /v1/idle HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer valid-token\r\n\r\n");
    const t0 = await answered;
    expect(received).toMatch(/^HTTP\/1.1 200/);
    expect(received).toMatch(/\r\nconnection: keep-alive\r\n/i);
    await once(socket, "close");
    const idleMs = performance.now() - t0;
    expect(idleMs).toBeGreaterThanOrEqual(KEEP_ALIVE_TIMEOUT_MS - 20);
    // Node closes keepAliveTimeout + 1 s after the response (a margin against the client's own timer).
    expect(idleMs).toBeLessThan(KEEP_ALIVE_TIMEOUT_MS + 1000 + SLACK_MS);
  });
});
