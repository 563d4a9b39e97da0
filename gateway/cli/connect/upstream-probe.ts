/**
 * `--connect` for `upstreams`: each endpoint URL of each upstream is connected to (TCP, bounded by
 * `connect_timeout_ms`) and, for `https://`, the TLS handshake is made with the upstream's own
 * settings (CA, client certificate, SNI, verification) as the proxy makes it. With a
 * `health_check`, the endpoint is then asked its health-check path as the probes ask it (SPEC §16:
 * a 2xx or 3xx within `health_check.timeout_ms`), so a wrong path fails here, not in production.
 */
import net from "node:net";
import tls from "node:tls";
import { Client } from "undici";
import type { GatewayConfig } from "../../config/schema.js";
import { endpointsOf, type UpstreamConfig } from "../../config/upstream-schema.js";
import { endpointAddress, undiciConnect, type EndpointAddress } from "../../proxy/endpoint-address.js";
import { errorText, within, type ProbeResult } from "./probe.js";

/**
 * The URLs an upstream sends requests to: its `url`, or each of its `endpoints` (SPEC §16).
 * The one place `--connect` learns them.
 */
export function upstreamUrls(upstream: UpstreamConfig): string[] {
  return endpointsOf(upstream).map((e) => e.url);
}

function tcp(host: string, port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
}

function handshake(socket: net.Socket, options: tls.ConnectionOptions): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const secure = tls.connect({ ...options, socket });
    secure.once("secureConnect", () => resolve(secure));
    secure.once("error", reject);
  });
}

async function endpoint(
  name: string,
  upstream: UpstreamConfig,
  url: string,
  baseDir: string,
): Promise<ProbeResult> {
  const what = `upstream ${name} ${new URL(url).origin}`;
  const limit = upstream.connect_timeout_ms;
  let socket: net.Socket | undefined;
  try {
    // The proxy's own builder: the same host, port, SNI and TLS material as its calls.
    const at = endpointAddress(name, upstream, url, baseDir);
    socket = await within(
      tcp(at.host, at.port),
      limit,
      `no TCP connection within ${limit} ms (connect_timeout_ms)`,
    );
    const settings = at.tls;
    if (settings === null) return healthOf(upstream, at, what, "TCP connection accepted");
    const secure = await within(
      handshake(socket, {
        ...settings,
        ...(settings.servername === "" ? {} : { servername: settings.servername }),
      }),
      limit,
      `no TLS handshake within ${limit} ms`,
    );
    socket = secure;
    const cert = secure.getPeerCertificate();
    const names = cert.subjectaltname ?? cert.subject?.CN ?? "?";
    const answer = `TCP and TLS ok (${secure.getProtocol()}, certificate ${names}, valid until ${cert.valid_to})`;
    return healthOf(upstream, at, what, answer);
  } catch (err) {
    return { ok: false, what, answer: errorText(err) };
  } finally {
    socket?.destroy();
  }
}

/**
 * The endpoint's answer to its health-check path, after its connection was made; `connected`
 * alone without a `health_check`.
 */
async function healthOf(
  upstream: UpstreamConfig,
  at: EndpointAddress,
  what: string,
  connected: string,
): Promise<ProbeResult> {
  const h = upstream.health_check;
  if (h === undefined) return { ok: true, what, answer: connected };
  const path = at.basePath + h.path;
  const client = new Client(at.origin, {
    connect: undiciConnect(at, upstream.connect_timeout_ms),
    headersTimeout: h.timeout_ms,
    bodyTimeout: h.timeout_ms,
  });
  try {
    const res = await within(
      client.request({ method: "GET", path }),
      h.timeout_ms,
      `no answer to GET ${path} within ${h.timeout_ms} ms (health_check.timeout_ms)`,
    );
    await res.body.dump();
    const ok = res.statusCode >= 200 && res.statusCode < 400;
    return { ok, what, answer: `${connected}; health check GET ${path} answered ${res.statusCode}` };
  } catch (err) {
    return { ok: false, what, answer: `${connected}; health check GET ${path}: ${errorText(err)}` };
  } finally {
    void client.destroy();
  }
}

/** @returns one result per endpoint URL of every upstream */
export async function probeUpstreams(config: GatewayConfig, baseDir: string): Promise<ProbeResult[]> {
  const tries = Object.entries(config.upstreams).flatMap(([name, u]) =>
    upstreamUrls(u).map((url) => endpoint(name, u, url, baseDir)),
  );
  return Promise.all(tries);
}
