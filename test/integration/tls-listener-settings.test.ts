/**
 * The TLS listener's settings as a client sees them (SPEC §12): `http2: false` makes ALPN offer only
 * `http/1.1` (and `true`, the default, `h2` first); `min_version: TLSv1.3` refuses a TLS 1.2
 * handshake; `http2_max_streams` is the SETTINGS_MAX_CONCURRENT_STREAMS the server announces.
 */
import { once } from "node:events";
import http2 from "node:http2";
import tls from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen } from "../helpers/http.js";
import { createPki, type TestPki } from "../helpers/tls.js";

let pki: TestPki;
let upstream: Awaited<ReturnType<typeof listen>>;
const started: TestGateway[] = [];

beforeAll(async () => {
  pki = createPki();
  upstream = await listen((_req, res) => res.end("ok"));
});

afterAll(async () => {
  await Promise.all(started.map((g) => g.close()));
  await closeServer(upstream.server);
  pki.remove();
});

async function gatewayWith(listen: Record<string, unknown>): Promise<TestGateway> {
  const gw = await startGateway(
    testConfig(upstream.url, {
      listen: {
        host: "127.0.0.1",
        port: 0,
        grace_ms: 1000,
        tls: { cert_file: pki.serverCertFile, key_file: pki.serverKeyFile },
        ...listen,
      },
    }),
  );
  started.push(gw);
  return gw;
}

/** The outcome of a TLS handshake offering h2 and http/1.1. */
async function handshake(
  port: number,
  options: tls.ConnectionOptions = {},
): Promise<{ alpn: string | false | null; version: string | null } | Error> {
  const socket = tls.connect({
    host: "127.0.0.1",
    port,
    servername: "localhost",
    ca: pki.ca,
    ALPNProtocols: ["h2", "http/1.1"],
    ...options,
  });
  try {
    await once(socket, "secureConnect");
    return { alpn: socket.alpnProtocol, version: socket.getProtocol() };
  } catch (err) {
    return err as Error;
  } finally {
    socket.destroy();
  }
}

describe("the TLS listener's settings", () => {
  it("offers h2 by default and only http/1.1 with http2: false", async () => {
    const on = await gatewayWith({});
    const off = await gatewayWith({ http2: false });
    expect(await handshake(on.apiPort)).toMatchObject({ alpn: "h2" });
    expect(await handshake(off.apiPort)).toMatchObject({ alpn: "http/1.1" });
  });

  it("refuses a TLS 1.2 handshake with min_version: TLSv1.3, and accepts 1.2 by default", async () => {
    const strict = await gatewayWith({
      tls: { cert_file: pki.serverCertFile, key_file: pki.serverKeyFile, min_version: "TLSv1.3" },
    });
    const lenient = await gatewayWith({});
    expect(await handshake(strict.apiPort, { maxVersion: "TLSv1.2" })).toBeInstanceOf(Error);
    expect(await handshake(strict.apiPort)).toMatchObject({ version: "TLSv1.3" });
    expect(await handshake(lenient.apiPort, { maxVersion: "TLSv1.2" })).toMatchObject({ version: "TLSv1.2" });
  });

  it("announces http2_max_streams as the server's SETTINGS_MAX_CONCURRENT_STREAMS", async () => {
    const gw = await gatewayWith({ http2_max_streams: 7 });
    const session = http2.connect(`https://localhost:${gw.apiPort}`, { ca: pki.ca });
    const [settings] = (await once(session, "remoteSettings")) as [http2.Settings];
    expect(settings.maxConcurrentStreams).toBe(7);
    session.close();
  });
});
