/**
 * WebSocket upgrades are authenticated and counted at the handshake (401/429 as plain
 * HTTP with the rate-limit headers, no upgrade), the 101 carries the gateway's headers, frames are
 * piped both ways, closing either side closes the other, and 1000 connect/close cycles leak no socket.
 */
import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";

let wss: WebSocketServer;
let gw: TestGateway;
let wsBase: string;
/** Headers of the last handshake the upstream accepted. */
let lastUpstreamHeaders: IncomingHttpHeaders = {};

beforeAll(async () => {
  wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await once(wss, "listening");
  wss.on("connection", (ws, req) => {
    lastUpstreamHeaders = req.headers;
    ws.on("message", (data, isBinary) => {
      const text = data.toString();
      if (text === "close-from-upstream") ws.close(4001, "upstream says bye");
      else if (text === "terminate-from-upstream") ws.terminate();
      else ws.send(isBinary ? data : `echo:${text}`, { binary: isBinary });
    });
  });
  const port = (wss.address() as { port: number }).port;
  gw = await startGateway(
    testConfig(`http://127.0.0.1:${port}`, {
      rate_limits: {
        classes: {
          limited: { match: { paths: ["/v1/limited"] }, windows: [{ limit: 1, window_s: 3600 }] },
          read: { match: { methods: ["GET"] }, windows: [{ limit: 100_000, window_s: 3600 }] },
        },
        anonymous: { windows: [{ limit: 2, window_s: 3600 }] },
      },
    }),
  );
  wsBase = gw.url.replace(/^http/, "ws");
});

afterAll(async () => {
  await gw.close();
  for (const c of wss.clients) c.terminate();
  await new Promise((r) => wss.close(r));
});

const AUTH = { authorization: "Bearer valid-token" };

/** Opens a client; resolves on `open` with the 101's headers, rejects with the HTTP answer otherwise. */
function connect(
  path: string,
  headers: Record<string, string> = AUTH,
): Promise<{ ws: WebSocket; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${wsBase}${path}`, { headers });
    let upgradeHeaders: IncomingHttpHeaders = {};
    ws.once("upgrade", (res: IncomingMessage) => (upgradeHeaders = res.headers));
    ws.once("open", () => resolve({ ws, headers: upgradeHeaders }));
    ws.once("unexpected-response", (_req, res: IncomingMessage) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { res, body })));
    });
    ws.once("error", reject);
  });
}

type Rejection = Error & { res: IncomingMessage; body: string };

async function rejected(path: string, headers?: Record<string, string>): Promise<Rejection> {
  const err = (await connect(path, headers).then(
    () => expect.fail("the handshake should have been rejected"),
    (e: unknown) => e,
  )) as Rejection;
  expect(err.res, String(err)).toBeDefined();
  return err;
}

function nextMessage(ws: WebSocket): Promise<string> {
  return once(ws, "message").then(([data]) => String(data));
}

function expectRateLimitHeaders(h: IncomingHttpHeaders): void {
  expect(h["x-ratelimit-limit"]).toMatch(/^\d+$/);
  expect(h["x-ratelimit-remaining"]).toMatch(/^\d+$/);
  expect(h["x-ratelimit-reset"]).toMatch(/^\d+$/);
  expect(h["x-request-id"]).toBeTruthy();
}

/** Open TCP sockets of this process (client, gateway and upstream sides alike). */
function tcpSockets(): number {
  return process.getActiveResourcesInfo().filter((r) => r === "TCPSocketWrap").length;
}

/** Waits (bounded) until at most `max` TCP sockets are open; returns the last count. */
async function settleSockets(max: number, timeoutMs = 5000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let n = tcpSockets();
  while (n > max && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    n = tcpSockets();
  }
  return n;
}

describe("handshake", () => {
  it("answers 401 as plain HTTP with the rate-limit headers when there is no token", async () => {
    const before = wss.clients.size;
    const err = await rejected("/v1/chat", {});
    expect(err.res.statusCode).toBe(401);
    expect(err.res.headers["www-authenticate"]).toBe('Bearer realm="api"');
    expect(err.res.headers["x-ratelimit-resource"]).toBe("anonymous");
    expectRateLimitHeaders(err.res.headers);
    expect(JSON.parse(err.body)).toEqual({ error: { code: 401, message: "Authentication required" } });
    expect(wss.clients.size).toBe(before);
  });

  it("answers 429 as plain HTTP over the limit, with Retry-After and the headers", async () => {
    const { ws, headers } = await connect("/v1/limited");
    expect(headers["x-ratelimit-remaining"]).toBe("0");
    ws.close();
    const err = await rejected("/v1/limited");
    expect(err.res.statusCode).toBe(429);
    expect(err.res.headers["x-ratelimit-limit"]).toBe("1");
    expect(err.res.headers["x-ratelimit-remaining"]).toBe("0");
    expect(err.res.headers["x-ratelimit-resource"]).toBe("limited");
    expect(Number(err.res.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expectRateLimitHeaders(err.res.headers);
  });

  it("returns a 101 carrying X-RateLimit-* and X-Request-Id, and pipes frames both ways", async () => {
    const { ws, headers } = await connect("/v1/chat", { ...AUTH, "x-request-id": "ws-trace-1" });
    expect(headers["x-ratelimit-limit"]).toBe("100000");
    expect(headers["x-ratelimit-resource"]).toBe("read");
    expect(headers["x-request-id"]).toBe("ws-trace-1");
    expectRateLimitHeaders(headers);
    expect(lastUpstreamHeaders["x-auth-subject"]).toBe("alice");
    expect(lastUpstreamHeaders["x-request-id"]).toBe("ws-trace-1");

    const reply = nextMessage(ws);
    ws.send("hello");
    expect(await reply).toBe("echo:hello");
    const big = Buffer.alloc(256 * 1024, 7);
    const binary = once(ws, "message") as Promise<[Buffer, boolean]>;
    ws.send(big);
    const [data, isBinary] = await binary;
    expect(isBinary).toBe(true);
    expect(Buffer.compare(data, big)).toBe(0);
    ws.close(1000);
    expect((await once(ws, "close"))[0]).toBe(1000);
  });
});

describe("closing", () => {
  /** Resolves with the upstream's end of the next connection. */
  const nextUpstream = (): Promise<WebSocket> => once(wss, "connection").then(([s]) => s as WebSocket);

  it("a client close reaches the upstream", async () => {
    const upstreamSide = nextUpstream();
    const { ws } = await connect("/v1/chat");
    const server = await upstreamSide;
    const closed = once(server, "close");
    ws.close(4000, "client bye");
    const [code, reason] = (await closed) as [number, Buffer];
    expect(code).toBe(4000);
    expect(reason.toString()).toBe("client bye");
  });

  it("a client that vanishes (TCP reset) closes the upstream side", async () => {
    const upstreamSide = nextUpstream();
    const { ws } = await connect("/v1/chat");
    const server = await upstreamSide;
    const closed = once(server, "close");
    ws.terminate();
    const [code] = (await closed) as [number];
    // No close frame reached the upstream: its side ends abnormally, and is closed.
    expect(code).toBe(1006);
    expect(server.readyState).toBe(WebSocket.CLOSED);
  });

  it("an upstream close reaches the client", async () => {
    const { ws } = await connect("/v1/chat");
    const closed = once(ws, "close");
    ws.send("close-from-upstream");
    const [code, reason] = (await closed) as [number, Buffer];
    expect(code).toBe(4001);
    expect(reason.toString()).toBe("upstream says bye");
  });

  it("an upstream that drops the connection closes the client", async () => {
    const { ws } = await connect("/v1/chat");
    const closed = once(ws, "close");
    ws.send("terminate-from-upstream");
    const [code] = (await closed) as [number];
    expect(code).toBe(1006); // abnormal closure: no close frame, the socket just ended
  });
});

describe("no socket leak", () => {
  it("1000 connect/echo/close cycles leave no open socket behind", { timeout: 60_000 }, async () => {
    const baseline = await settleSockets(0, 2000);
    const t0 = performance.now();
    const cycles = 1000;
    const batch = 50;
    for (let i = 0; i < cycles; i += batch) {
      await Promise.all(
        Array.from({ length: batch }, async (_, j) => {
          const { ws } = await connect("/v1/chat");
          const reply = nextMessage(ws);
          ws.send(`m${i + j}`);
          expect(await reply).toBe(`echo:m${i + j}`);
          // Alternate who closes, and how.
          const closed = once(ws, "close");
          if (j % 4 === 0) ws.terminate();
          else if (j % 4 === 1) ws.send("close-from-upstream");
          else ws.close();
          await closed;
        }),
      );
    }
    const elapsedMs = performance.now() - t0;
    // Client, gateway (both legs) and upstream sockets of every cycle must be gone.
    const left = await settleSockets(baseline + 2);
    expect(left, `open TCP sockets: baseline ${baseline}, after ${left}`).toBeLessThanOrEqual(baseline + 2);
    expect(wss.clients.size).toBe(0);
    expect(elapsedMs).toBeLessThan(30_000);
    console.log(`websocket: ${cycles} cycles in ${Math.round(elapsedMs)} ms; sockets ${baseline} -> ${left}`);
  });
});
