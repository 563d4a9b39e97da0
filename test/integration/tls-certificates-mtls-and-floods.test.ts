/**
 * The TLS listener's certificates and limits (SPEC §12): mutual TLS (no certificate, no
 * handshake; the verified subject sent upstream as X-Client-Cert-Subject, a client's copy removed);
 * a certificate rotated by SIGHUP (reload) is served to new connections — seen by its serial — while
 * open sessions continue; a bad file is an error naming its key path, fatal at start and keeping the
 * running configuration at reload; a rapid-reset flood (CVE-2023-44487) ends that connection with
 * GOAWAY while another client keeps being served; a drain sends GOAWAY and lets in-flight streams
 * complete.
 */
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http2, { type ClientHttp2Session } from "node:http2";
import { tmpdir } from "node:os";
import path from "node:path";
import tls from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { FIXTURES, startGateway, testConfig, TOKENS_FILE, type TestGateway } from "../helpers/gateway.js";
import { h2connect, h2request } from "../helpers/h2.js";
import { closeServer, listen } from "../helpers/http.js";
import { createPki, type TestPki } from "../helpers/tls.js";

let pki: TestPki;
let dir: string;
let upstream: Awaited<ReturnType<typeof listen>>;
const holds: (() => void)[] = [];
const AUTH = { authorization: "Bearer valid-token" };

beforeAll(async () => {
  pki = createPki();
  dir = mkdtempSync(path.join(tmpdir(), "gw-tls-"));
  upstream = await listen((req, res) => {
    const reply = () =>
      res.end(JSON.stringify({ certSubject: req.headers["x-client-cert-subject"] ?? null }));
    if (req.url === "/v1/slow") holds.push(reply);
    else reply();
  });
});

afterAll(async () => {
  for (const release of holds) release();
  await closeServer(upstream.server);
  pki.remove();
  rmSync(dir, { recursive: true, force: true });
});

function tlsConfig(listenTls: Record<string, unknown>): Record<string, unknown> {
  return testConfig(upstream.url, {
    listen: { host: "127.0.0.1", port: 0, grace_ms: 3000, tls: listenTls },
    auth: { static: { tokens_file: TOKENS_FILE } },
  });
}

/** The serial of the certificate a new connection is served. */
async function servedSerial(port: number): Promise<string> {
  const socket = tls.connect({
    host: "127.0.0.1",
    port,
    servername: "localhost",
    ca: pki.ca,
    ALPNProtocols: ["h2"],
  });
  await once(socket, "secureConnect");
  const serial = socket.getPeerX509Certificate()!.serialNumber;
  socket.destroy();
  return serial;
}

describe("mutual TLS", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway(
      tlsConfig({ cert_file: pki.serverCertFile, key_file: pki.serverKeyFile, client_ca_file: pki.caFile }),
    );
  });
  afterAll(() => gw.close());

  it("refuses a connection without a client certificate: no request gets an answer", async () => {
    // TLS 1.3: the client may finish its side of the handshake before the server's alert arrives.
    const session = http2.connect(`https://localhost:${gw.apiPort}`, { ca: pki.ca, servername: "localhost" });
    session.on("error", () => {});
    const outcome = await new Promise<string>((resolve) => {
      const req = session.request({ ":path": "/v1/user", ...AUTH });
      req.on("response", () => resolve("answered"));
      req.on("error", () => resolve("refused"));
      req.on("close", () => resolve("refused"));
      session.on("close", () => resolve("refused"));
    });
    expect(outcome).toBe("refused");
    session.destroy();
  });

  it("sends the verified subject upstream and removes a client's copy", async () => {
    const session = await h2connect(`https://localhost:${gw.apiPort}`, {
      ca: pki.ca,
      cert: await import("node:fs").then((fs) => fs.readFileSync(pki.clientCertFile)),
      key: await import("node:fs").then((fs) => fs.readFileSync(pki.clientKeyFile)),
    });
    const res = await h2request(session, {
      ":path": "/v1/user",
      ...AUTH,
      "x-client-cert-subject": "CN=admin",
    });
    session.close();
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ certSubject: "CN=gateway,O=Gateway Tests" });
  });
});

describe("certificate rotation and bad files", () => {
  it("serves a certificate rotated by reload to new connections while open sessions continue", async () => {
    const file = path.join(dir, "rotate.yaml");
    writeFileSync(file, stringify(tlsConfig({ cert_file: pki.serverCertFile, key_file: pki.serverKeyFile })));
    const gw = await startGateway(tlsConfig({ cert_file: pki.serverCertFile, key_file: pki.serverKeyFile }));
    try {
      const before = await servedSerial(gw.apiPort);
      const open = await h2connect(`https://localhost:${gw.apiPort}`, { ca: pki.ca });
      const next = pki.issueServer("rotated");
      writeFileSync(file, stringify(tlsConfig({ cert_file: next.certFile, key_file: next.keyFile })));
      expect(await gw.gateway.reload(file)).toBe(true);
      const after = await servedSerial(gw.apiPort);
      expect(after).not.toBe(before);
      expect((await h2request(open, { ":path": "/v1/user", ...AUTH })).status).toBe(200);
      open.close();
      // A reload naming a missing key keeps the running certificate.
      writeFileSync(
        file,
        stringify(tlsConfig({ cert_file: next.certFile, key_file: path.join(dir, "missing.key") })),
      );
      expect(await gw.gateway.reload(file)).toBe(false);
      expect(await servedSerial(gw.apiPort)).toBe(after);
    } finally {
      await gw.close();
    }
  });

  it("names listen.tls.key_file for a key that does not match the certificate, at start", async () => {
    const other = pki.issueServer("other");
    await expect(
      startGateway(tlsConfig({ cert_file: pki.serverCertFile, key_file: other.keyFile })),
    ).rejects.toThrow(/^listen\.tls\.key_file: does not match listen\.tls\.cert_file/);
  });

  it("names listen.tls.cert_file for a file that cannot be read, at start", async () => {
    await expect(
      startGateway(tlsConfig({ cert_file: path.join(FIXTURES, "nope.crt"), key_file: pki.serverKeyFile })),
    ).rejects.toThrow(/^listen\.tls\.cert_file: cannot read /);
  });
});

describe("HTTP/2 floods and drain", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway(tlsConfig({ cert_file: pki.serverCertFile, key_file: pki.serverKeyFile }));
  });
  afterAll(() => gw.close());

  it("closes a rapid-reset connection with GOAWAY and keeps serving another client", async () => {
    const origin = `https://localhost:${gw.apiPort}`;
    const victim = await h2connect(origin, { ca: pki.ca });
    const attacker = await h2connect(origin, { ca: pki.ca });
    const goaway = new Promise<number>((resolve) => {
      attacker.on("goaway", (code: number) => resolve(code));
      attacker.on("close", () => resolve(-1));
    });
    let sent = 0;
    for (; sent < 5000 && !attacker.closed && !attacker.destroyed; sent++) {
      try {
        const s = attacker.request({ ":path": "/v1/user", ...AUTH });
        s.on("error", () => {});
        s.close(http2.constants.NGHTTP2_CANCEL);
      } catch {
        break;
      }
      if (sent % 200 === 199) await new Promise((r) => setImmediate(r));
    }
    // The server ends the flooding connection (GOAWAY, whichever error code nghttp2 gives it);
    // without the bound it would serve all 5000 streams and the test would time out here.
    const code = await goaway;
    expect(typeof code).toBe("number");
    expect(sent).toBeGreaterThan(1000);
    // Another caller (the attacker's own budget may be spent by the streams that got through).
    const res = await h2request(victim, { ":path": "/v1/user", authorization: "Bearer reader-token" });
    expect(res.status).toBe(200);
    victim.close();
    attacker.destroy();
  });

  it("drains with GOAWAY: the in-flight stream completes, the session takes no new one", async () => {
    const local = await startGateway(
      tlsConfig({ cert_file: pki.serverCertFile, key_file: pki.serverKeyFile }),
    );
    const session: ClientHttp2Session = await h2connect(`https://localhost:${local.apiPort}`, { ca: pki.ca });
    const holdsBefore = holds.length;
    const slow = h2request(session, { ":path": "/v1/slow", ...AUTH });
    while (holds.length === holdsBefore) await once(upstream.server, "request");
    const goaway = once(session, "goaway");
    const closed = local.gateway.close(3000);
    await goaway;
    holds[holdsBefore]!();
    expect((await slow).status).toBe(200);
    await closed;
    session.destroy();
  });
});
