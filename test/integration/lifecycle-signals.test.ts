/**
 * SIGTERM/SIGINT drain in-flight requests
 * within `listen.grace_ms`, refuse new connections, close idle keep-alive sockets and exit 0;
 * SIGHUP swaps a valid config without dropping a connection and rejects an invalid one (logged,
 * counted in `gateway_config_reloads_total{result="error"}`).
 */
import http, { type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { EventEmitter, once } from "node:events";
import { readFileSync } from "node:fs";
import net from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { childConfig, spawnGateway, type ChildGateway } from "../helpers/child-gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";

const AUTH = { authorization: "Bearer valid-token" };

let upstream: { server: Server; url: string };
/** Upstream requests carrying `X-Hold: <name>` wait here until the test answers them. */
const held = new Map<string, ServerResponse>();
const heldEvents = new EventEmitter();
let gw: ChildGateway | undefined;

beforeAll(async () => {
  upstream = await listen((req: IncomingMessage, res: ServerResponse) => {
    const hold = req.headers["x-hold"];
    if (typeof hold === "string") {
      held.set(hold, res);
      heldEvents.emit(hold, res);
      return;
    }
    const body = JSON.stringify({ url: req.url });
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  });
});

afterEach(async () => {
  await gw?.dispose();
  gw = undefined;
  for (const res of held.values()) res.destroy();
  held.clear();
});

afterAll(async () => {
  await closeServer(upstream.server);
});

/** Resolves with the upstream's held response once the request named `name` reached it. */
function heldResponse(name: string): Promise<ServerResponse> {
  const res = held.get(name);
  return res !== undefined
    ? Promise.resolve(res)
    : (once(heldEvents, name) as Promise<[ServerResponse]>).then(([r]) => r);
}

/** A raw keep-alive connection that can send several requests and tells when the peer closed it. */
class RawConnection {
  readonly socket: net.Socket;
  readonly closed: Promise<void>;
  private buffer = "";
  private waiter: (() => void) | null = null;

  constructor(port: number) {
    this.socket = net.connect(port, "127.0.0.1");
    this.socket.setEncoding("latin1");
    this.socket.on("data", (c: string) => {
      this.buffer += c;
      this.waiter?.();
    });
    this.socket.on("error", () => {});
    this.closed = once(this.socket, "close").then(() => undefined);
  }

  /** Sends a GET and resolves with the head and body of one complete (Content-Length) response. */
  async get(path: string, headers: Record<string, string> = AUTH): Promise<{ head: string; body: string }> {
    const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
    this.socket.write(`GET ${path} HTTP/1.1\r\nHost: gw\r\n${lines.join("")}\r\n`);
    for (;;) {
      const end = this.buffer.indexOf("\r\n\r\n");
      if (end >= 0) {
        const head = this.buffer.slice(0, end);
        const len = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (this.buffer.length >= end + 4 + len) {
          const body = this.buffer.slice(end + 4, end + 4 + len);
          this.buffer = this.buffer.slice(end + 4 + len);
          return { head, body };
        }
      }
      const more = new Promise<void>((r) => (this.waiter = r));
      await Promise.race([more, this.closed.then(() => Promise.reject(new Error("connection closed")))]);
    }
  }
}

/** Starts a request through the gateway that the upstream holds as `name`; resolves when it got there. */
async function startHeld(
  port: number,
  name: string,
): Promise<{ response: Promise<IncomingMessage & { text: string }>; upstreamRes: ServerResponse }> {
  const agent = new http.Agent({ keepAlive: true });
  const response = new Promise<IncomingMessage & { text: string }>((resolve, reject) => {
    const req = http.get(
      `http://127.0.0.1:${port}/v1/slow`,
      { agent, headers: { ...AUTH, "x-hold": name } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve(Object.assign(res, { text })));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
  });
  response.catch(() => {});
  const upstreamRes = await heldResponse(name);
  return { response, upstreamRes };
}

function connectRefused(port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => (s.destroy(), resolve("connected")));
    s.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? "error"));
  });
}

/** True when some process listens on `port` (a /proc/net/tcp LISTEN row). */
function anyListenerOn(port: number): boolean {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, "0")} `;
  return ["/proc/net/tcp", "/proc/net/tcp6"].some((t) =>
    readFileSync(t, "utf8")
      .split("\n")
      .some((row) => row.includes(hex) && row.trim().split(/\s+/)[3] === "0A"),
  );
}

function metricValue(text: string, name: string, labels: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

describe("SIGTERM", () => {
  it("finishes the in-flight request, refuses new connections, closes idle keep-alive sockets, exits 0", async () => {
    gw = await spawnGateway((ports) => childConfig(upstream.url, ports, {}, { grace_ms: 8000 }));
    const idle = new RawConnection(gw.apiPort);
    expect((await idle.get("/v1/warm")).head).toMatch(/^HTTP\/1.1 200/);
    const { response, upstreamRes } = await startHeld(gw.apiPort, "term");
    expect(gw.listeningPorts()).toEqual(new Set([gw.apiPort, gw.adminPort]));

    const t0 = performance.now();
    gw.signal("SIGTERM");
    await idle.closed; // the idle keep-alive socket is closed at once
    // The listeners are closed: the process holds no listening socket and a new connection is
    // refused (unless, in a busy CI, another process was just given the freed port). A listener's
    // fd is released on the event loop's next turn, which the idle socket's close can beat (seen
    // in CI), and nothing tells a client it is gone: /proc is polled, for at most 2 s.
    const child = gw;
    await expect.poll(() => child.listeningPorts(), { timeout: 2000, interval: 10 }).toEqual(new Set());
    const refused = await connectRefused(gw.apiPort);
    if (refused !== "ECONNREFUSED") expect(anyListenerOn(gw.apiPort)).toBe(true);

    upstreamRes.writeHead(200, { "content-type": "text/plain" });
    upstreamRes.end("finished after SIGTERM");
    const res = await response;
    expect(res.statusCode).toBe(200);
    expect(res.text).toBe("finished after SIGTERM");
    // The client must not reuse a connection the gateway is about to close.
    expect(res.headers.connection).toBe("close");

    const { code } = await gw.exited;
    expect(code).toBe(0);
    expect(performance.now() - t0).toBeLessThan(8000);
    expect(gw.lines.some((l) => l.msg === "gateway stopped")).toBe(true);
  });

  it("cuts a request that outlives grace_ms and still exits 0 after about grace_ms", async () => {
    const graceMs = 1000;
    gw = await spawnGateway((ports) => childConfig(upstream.url, ports, {}, { grace_ms: graceMs }));
    const { response } = await startHeld(gw.apiPort, "too-slow");
    const t0 = performance.now();
    gw.signal("SIGTERM");
    await expect(response).rejects.toThrow(/socket hang up|ECONNRESET/);
    const { code } = await gw.exited;
    const elapsed = performance.now() - t0;
    expect(code).toBe(0);
    expect(elapsed).toBeGreaterThanOrEqual(graceMs - 50);
    expect(elapsed).toBeLessThan(graceMs + 2000);
  });

  it("ends an open WebSocket-style upgraded connection at grace_ms instead of hanging", async () => {
    const graceMs = 800;
    gw = await spawnGateway((ports) => childConfig(upstream.url, ports, {}, { grace_ms: graceMs }));
    // An upgraded (101) tunnel the upstream never closes.
    let upstreamSide: net.Socket | undefined;
    upstream.server.once("upgrade", (_req: IncomingMessage, socket: net.Socket) => {
      upstreamSide = socket;
      socket.write("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
    });
    const tunnel = net.connect(gw.apiPort, "127.0.0.1");
    tunnel.on("error", () => {});
    tunnel.write(
      "GET /v1/ws HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer valid-token\r\nConnection: Upgrade\r\n" +
        "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
    );
    const [first] = (await once(tunnel, "data")) as [Buffer];
    expect(first.toString("latin1")).toMatch(/^HTTP\/1.1 101/);

    const t0 = performance.now();
    gw.signal("SIGTERM");
    await once(tunnel, "close");
    const { code } = await gw.exited;
    expect(code).toBe(0);
    expect(performance.now() - t0).toBeLessThan(graceMs + 2000);
    upstreamSide?.destroy();
  });
});

describe("SIGINT", () => {
  it("stops gracefully and exits 0", async () => {
    gw = await spawnGateway((ports) => childConfig(upstream.url, ports));
    expect((await request(`${gw.url}/v1/x`, { headers: AUTH })).status).toBe(200);
    gw.signal("SIGINT");
    expect(await gw.exited).toEqual({ code: 0, signal: null });
  });
});

describe("SIGHUP", () => {
  const limited = (limit: number) => ({
    rate_limits: {
      classes: { read: { match: { methods: ["GET"] }, windows: [{ limit, window_s: 3600 }] } },
      anonymous: { windows: [{ limit: 100, window_s: 3600 }] },
    },
  });

  it("applies a changed limit and a new route without dropping an open keep-alive connection", async () => {
    let ports = { apiPort: 0, adminPort: 0 };
    gw = await spawnGateway((p) => ((ports = p), childConfig(upstream.url, p, limited(5))));
    const conn = new RawConnection(gw.apiPort);
    const before = await conn.get("/v1/a");
    expect(before.head).toMatch(/^HTTP\/1.1 200/);
    expect(before.head).toMatch(/\r\nx-ratelimit-limit: 5\r\n/i);
    expect((await conn.get("/v2/a")).head).toMatch(/^HTTP\/1.1 404/);

    gw.writeConfig(
      childConfig(upstream.url, ports, {
        ...limited(1),
        routes: [
          { prefix: "/v1", upstream: "docs" },
          { prefix: "/v2", upstream: "docs" },
        ],
      }),
    );
    gw.signal("SIGHUP");
    await gw.waitForLine((l) => l.msg === "configuration reloaded");

    // Same socket: the limit is now 1 and the one call already made (counts survive) spent it.
    const after = await conn.get("/v1/a");
    expect(after.head).toMatch(/^HTTP\/1.1 429/);
    expect(after.head).toMatch(/\r\nx-ratelimit-limit: 1\r\n/i);
    const v2 = await conn.get("/v2/a", { authorization: "Bearer reader-token" });
    expect(v2.head).toMatch(/^HTTP\/1.1 200/);
    expect(JSON.parse(v2.body)).toEqual({ url: "/v2/a" });
    conn.socket.destroy();

    const metrics = await request(`${gw.adminUrl}/metrics`);
    expect(metricValue(metrics.body, "gateway_config_reloads_total", 'result="success"')).toBe(1);
  });

  it("keeps the running config when the file is invalid, logs an error and counts it", async () => {
    gw = await spawnGateway((p) => childConfig(upstream.url, p, limited(5)));
    const conn = new RawConnection(gw.apiPort);
    expect((await conn.get("/v1/a")).head).toMatch(/\r\nx-ratelimit-limit: 5\r\n/i);

    gw.writeConfig(
      "listen: { port: -1 }\nupstreams: {}\nroutes: []\nauth: { realm: api }\nrate_limits: { classes: {} }\n",
    );
    gw.signal("SIGHUP");
    const logged = await gw.waitForLine((l) => l.level === "error");
    expect(String(logged.msg)).toMatch(/reload rejected/);
    expect(JSON.stringify(logged)).toMatch(/listen\.port/);

    const still = await conn.get("/v1/a");
    expect(still.head).toMatch(/^HTTP\/1.1 200/);
    expect(still.head).toMatch(/\r\nx-ratelimit-limit: 5\r\n/i);
    conn.socket.destroy();

    const metrics = await request(`${gw.adminUrl}/metrics`);
    expect(metricValue(metrics.body, "gateway_config_reloads_total", 'result="error"')).toBe(1);
    expect(metricValue(metrics.body, "gateway_config_reloads_total", 'result="success"') ?? 0).toBe(0);
  });
});
