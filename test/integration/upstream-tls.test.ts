/**
 * `https://` upstreams through the one upstream client (SPEC §12): a private CA given
 * by `upstreams.<name>.tls.ca_file` serves plain requests and WebSocket upgrades alike; an
 * untrusted certificate is a 502; a client certificate (`cert_file`/`key_file`) reaches an upstream
 * that requires one; a file that cannot be read is a configuration error naming its key path.
 */
import { once } from "node:events";
import https from "node:https";
import type { TLSSocket } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, request } from "../helpers/http.js";
import { createPki, type TestPki } from "../helpers/tls.js";

let pki: TestPki;
let open: https.Server;
let mutual: https.Server;
let wss: WebSocketServer;
let gw: TestGateway;
const AUTH = { authorization: "Bearer valid-token" };

async function listenTls(server: https.Server): Promise<string> {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `https://127.0.0.1:${(server.address() as { port: number }).port}`;
}

beforeAll(async () => {
  pki = createPki();
  const tls = { cert: pki.serverCert, key: pki.serverKey };
  open = https.createServer(tls, (req, res) => {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ url: req.url, proto: req.headers["x-forwarded-proto"] }));
  });
  wss = new WebSocketServer({ server: open });
  wss.on("connection", (ws) => ws.on("message", (data) => ws.send(`tls-echo:${data.toString()}`)));
  mutual = https.createServer(
    { ...tls, ca: pki.ca, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      res.end(JSON.stringify({ client: peer.subject?.CN }));
    },
  );
  const openUrl = await listenTls(open);
  const mutualUrl = await listenTls(mutual);
  gw = await startGateway(
    testConfig(openUrl, {
      upstreams: {
        docs: { url: openUrl, tls: { ca_file: pki.caFile } },
        untrusted: { url: openUrl },
        mutual: {
          url: mutualUrl,
          tls: { ca_file: pki.caFile, cert_file: pki.clientCertFile, key_file: pki.clientKeyFile },
        },
        anonymous_client: { url: mutualUrl, tls: { ca_file: pki.caFile } },
      },
      routes: [
        { prefix: "/v1", upstream: "docs" },
        { prefix: "/untrusted", upstream: "untrusted" },
        { prefix: "/mutual", upstream: "mutual" },
        { prefix: "/no-client-cert", upstream: "anonymous_client" },
      ],
    }),
  );
});

afterAll(async () => {
  await gw?.close();
  for (const c of wss?.clients ?? []) c.terminate();
  await Promise.all([open, mutual].filter(Boolean).map((s) => closeServer(s)));
  pki?.remove();
});

describe("an https:// upstream with a private CA", () => {
  it("proxies plain requests with the rate-limit headers", async () => {
    const res = await request(`${gw.url}/v1/user?x=1`, { headers: AUTH });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ url: "/v1/user?x=1", proto: "http" });
    expect(res.headers["x-ratelimit-limit"]).toBeDefined();
  });

  it("relays WebSocket upgrades over the same TLS settings", async () => {
    const ws = new WebSocket(`${gw.url.replace(/^http/, "ws")}/v1/socket`, { headers: AUTH });
    await once(ws, "open");
    ws.send("hello");
    const [data] = (await once(ws, "message")) as [Buffer];
    expect(data.toString()).toBe("tls-echo:hello");
    ws.close();
  });

  it("answers 502 when the upstream's certificate is not trusted", async () => {
    const res = await request(`${gw.url}/untrusted/x`, { headers: AUTH });
    expect(res.status).toBe(502);
    expect(JSON.parse(res.body)).toEqual({ error: { code: 502, message: "Bad gateway" } });
    expect(res.headers["x-ratelimit-remaining"]).toBeDefined();
  });
});

describe("mutual TLS to the upstream", () => {
  it("presents tls.cert_file / key_file to an upstream that requires a client certificate", async () => {
    const res = await request(`${gw.url}/mutual/x`, { headers: AUTH });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ client: "gateway" });
  });

  it("answers 502 when the upstream refuses a connection without a client certificate", async () => {
    const res = await request(`${gw.url}/no-client-cert/x`, { headers: AUTH });
    expect(res.status).toBe(502);
  });
});

describe("configuration errors", () => {
  it("names the key path of a TLS file that cannot be read", async () => {
    const config = testConfig("https://127.0.0.1:1", {
      upstreams: { docs: { url: "https://127.0.0.1:1", tls: { ca_file: "/nonexistent/ca.pem" } } },
    });
    await expect(startGateway(config)).rejects.toThrow(
      /^upstreams\.docs\.tls\.ca_file: cannot read \/nonexistent\/ca\.pem/,
    );
  });
});
