/**
 * Where one endpoint of an upstream is and how to connect to it (SPEC §6, §12, §16): its origin,
 * host and port, base path, `host:port` name and TLS settings (`upstreams.<name>.tls`, files read
 * once). The one builder of them: the endpoint's undici pool and WebSocket agent, the health
 * checker's probes and `gateway check --connect` all connect with what it returns, so a probe
 * or a check never reaches an endpoint differently from the calls.
 */
import { endpointName, type UpstreamConfig } from "../config/upstream-schema.js";
import { urlPort } from "../base/url-port.js";
import { upstreamTls, type UpstreamTls } from "./upstream-tls.js";

/** One endpoint's address and connection settings. */
export interface EndpointAddress {
  /** The URL as configured. */
  readonly url: string;
  /** `scheme://host:port` (undici's origin). */
  readonly origin: string;
  /** The host without IPv6 brackets (a TCP connect's host, a CLIENT span's `server.address`). */
  readonly host: string;
  readonly port: number;
  /** The URL's path without its trailing slash ("" for the root), prepended to every path. */
  readonly basePath: string;
  /** `host:port` as configured: its name in metrics, logs and the admin listener. */
  readonly name: string;
  /** TLS settings for `https://`, or null. */
  readonly tls: UpstreamTls | null;
}

/**
 * @param upstream - the upstream's config name (for error messages)
 * @param url - the endpoint's URL
 * @param baseDir - directory relative TLS file names resolve against (the config file's)
 * @throws ConfigFileError naming the key path when a TLS file cannot be read
 */
export function endpointAddress(
  upstream: string,
  cfg: UpstreamConfig,
  url: string,
  baseDir: string,
): EndpointAddress {
  const u = new URL(url);
  return {
    url,
    origin: u.origin,
    host: u.hostname.replace(/^\[|\]$/g, ""),
    port: urlPort(u),
    basePath: u.pathname.replace(/\/+$/, ""),
    name: endpointName(url),
    tls: upstreamTls(upstream, cfg, url, baseDir),
  };
}

/**
 * undici's `connect` options for the endpoint (a pool's, a probe's client's).
 * @param timeoutMs - the connect timeout (ms)
 */
export function undiciConnect(
  address: EndpointAddress,
  timeoutMs: number,
): { timeout: number } & Partial<UpstreamTls> {
  return { timeout: timeoutMs, ...address.tls };
}
