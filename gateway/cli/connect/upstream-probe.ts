/**
 * `--connect` for `upstreams`: each endpoint URL of each upstream is connected to (TCP, bounded by
 * `connect_timeout_ms`) and, for `https://`, the TLS handshake is made with the upstream's own
 * settings (CA, client certificate, SNI, verification) as the proxy makes it.
 */
import net from "node:net";
import tls from "node:tls";
import type { GatewayConfig } from "../../config/schema.js";
import { endpointsOf, type UpstreamConfig } from "../../config/upstream-schema.js";
import { upstreamTls } from "../../proxy/upstream-tls.js";
import { urlPort } from "../../base/url-port.js";
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
  const u = new URL(url);
  const host = u.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = urlPort(u);
  const what = `upstream ${name} ${u.origin}`;
  const limit = upstream.connect_timeout_ms;
  let socket: net.Socket | undefined;
  try {
    socket = await within(
      tcp(host, port),
      limit,
      `no TCP connection within ${limit} ms (connect_timeout_ms)`,
    );
    const settings = upstreamTls(name, upstream, url, baseDir);
    if (settings === null) return { ok: true, what, answer: "TCP connection accepted" };
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
    return {
      ok: true,
      what,
      answer: `TCP and TLS ok (${secure.getProtocol()}, certificate ${names}, valid until ${cert.valid_to})`,
    };
  } catch (err) {
    return { ok: false, what, answer: errorText(err) };
  } finally {
    socket?.destroy();
  }
}

/** @returns one result per endpoint URL of every upstream */
export async function probeUpstreams(config: GatewayConfig, baseDir: string): Promise<ProbeResult[]> {
  const tries = Object.entries(config.upstreams).flatMap(([name, u]) =>
    upstreamUrls(u).map((url) => endpoint(name, u, url, baseDir)),
  );
  return Promise.all(tries);
}
