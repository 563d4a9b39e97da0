/**
 * SPEC §16: WebSocket handshakes are balanced like other calls, and the access line names the
 * endpoint a call went to (`host:port` as configured), null for a call never proxied.
 */
import { once } from "node:events";
import net, { type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { createLogger } from "../../gateway/observability/logger.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { request } from "../helpers/http.js";
import { logLines, type LogLines } from "../helpers/log-lines.js";
import { waitFor } from "../helpers/redis-server.js";

const servers: WebSocketServer[] = [];
const names: string[] = [];
let gw: TestGateway;
let log: LogLines;

beforeAll(async () => {
  for (let i = 0; i < 2; i++) {
    const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await once(wss, "listening");
    wss.on("connection", (ws) => ws.send(`endpoint ${i}`));
    servers.push(wss);
    names.push(`127.0.0.1:${(wss.address() as AddressInfo).port}`);
  }
  log = logLines();
  gw = await startGateway(
    {
      ...testConfig(`http://${names[0]}`),
      upstreams: { docs: { endpoints: names.map((n) => ({ url: `http://${n}` })), timeout_ms: 5000 } },
    },
    { logger: createLogger("info", log.destination) },
  );
});

afterAll(async () => {
  await gw?.close();
  for (const wss of servers) {
    for (const c of wss.clients) c.terminate();
    await new Promise((r) => wss.close(r));
  }
});

/** Opens a WebSocket through the gateway and returns the first message, then closes. */
async function greeting(reqId: string): Promise<string> {
  const ws = new WebSocket(`ws://127.0.0.1:${gw.apiPort}/v1/socket`, {
    headers: { authorization: "Bearer valid-token", "x-request-id": reqId },
  });
  const [data] = (await once(ws, "message")) as [Buffer];
  ws.close();
  await once(ws, "close");
  return data.toString();
}

describe("upgrades across endpoints", () => {
  it("alternate between the endpoints, and each access line names its endpoint", async () => {
    const got: string[] = [];
    for (let i = 0; i < 4; i++) got.push(await greeting(`ws-${i}`));
    expect(got).toEqual(["endpoint 0", "endpoint 1", "endpoint 0", "endpoint 1"]);
    for (let i = 0; i < 4; i++) {
      const line = await log.waitFor((l) => l.reqId === `ws-${i}`);
      expect(line).toMatchObject({ status: 101, endpoint: names[i % 2] });
    }
  });

  it("a plain call's line names its endpoint too", async () => {
    const r = await request(`${gw.url}/v1/plain`, {
      headers: { authorization: "Bearer valid-token", "x-request-id": "plain" },
    });
    // The WebSocket servers answer a plain request 426; proxied as the upstream sent it.
    expect(r.status).toBe(426);
    const line = await log.waitFor((l) => l.reqId === "plain");
    expect(names).toContain(line.endpoint);
  });

  it("a handshake that is not a WebSocket one, or whose client leaves, leaves nothing in flight", async () => {
    // An h2c upgrade: http-proxy-3 relays only WebSocket handshakes.
    const h2c = net.connect(gw.apiPort, "127.0.0.1");
    h2c.on("error", () => {});
    h2c.write(
      "GET /v1/socket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n" +
        "HTTP2-Settings: AAMAAABkAAQAAP__\r\nAuthorization: Bearer valid-token\r\n\r\n",
    );
    await once(h2c, "close");
    // A client that leaves while the upstream has not answered its handshake.
    const silent = net.createServer((s) =>
      s.on("error", () => {}).on("data", () => silent.emit("handshake")),
    );
    silent.listen(0, "127.0.0.1");
    await once(silent, "listening");
    const silentPort = (silent.address() as AddressInfo).port;
    const g = await startGateway({
      ...testConfig(`http://127.0.0.1:${silentPort}`),
      upstreams: { docs: { url: `http://127.0.0.1:${silentPort}`, timeout_ms: 30_000 } },
    });
    try {
      const client = net.connect(g.apiPort, "127.0.0.1");
      client.on("error", () => {});
      client.write(
        "GET /v1/socket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
          "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
          "Authorization: Bearer valid-token\r\n\r\n",
      );
      // The handshake is on the wire upstream (unanswered) when the client resets its connection.
      // (A client's FIN is not seen before the 101: nothing reads the socket until the pipe.)
      await once(silent, "handshake");
      client.resetAndDestroy();
      await waitFor(
        "the exchange to end",
        async () => g.gateway.upstreams().docs!.endpoints[0]!.in_flight === 0,
        5000,
      );
    } finally {
      await g.close();
      silent.close();
    }
    expect(gw.gateway.upstreams().docs!.endpoints.map((e) => e.in_flight)).toEqual([0, 0]);
  });

  it("a call never proxied has a null endpoint", async () => {
    const r = await request(`${gw.url}/v1/socket`, { headers: { "x-request-id": "no-token" } });
    expect(r.status).toBe(401);
    expect(await log.waitFor((l) => l.reqId === "no-token")).toMatchObject({ status: 401, endpoint: null });
  });
});
