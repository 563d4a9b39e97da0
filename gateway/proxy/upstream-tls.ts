/**
 * TLS settings of one upstream (`upstreams.<name>.tls`), read once per configuration and shared by
 * everything that talks to that upstream: undici's pool for plain requests and the agent of
 * WebSocket upgrades.
 */
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import path from "node:path";
import { ConfigFileError } from "../config/finding.js";
import type { UpstreamConfig } from "../config/upstream-schema.js";

/** Options for `tls.connect` (undici's `connect`, `https.Agent`). */
export interface UpstreamTls {
  /** PEM of the CAs to trust instead of the system store, when `ca_file` is set. */
  ca?: Buffer;
  /** PEM client certificate chain (mutual TLS). */
  cert?: Buffer;
  /** PEM private key of `cert`. */
  key?: Buffer;
  /** SNI and the name the certificate is checked against; `""` checks the URL's IP address. */
  servername: string;
  rejectUnauthorized: boolean;
}

/**
 * @param name - the upstream's config name (for error messages)
 * @param url - the endpoint's URL (its host name is the default SNI); every endpoint of one upstream
 *   shares its scheme
 * @param baseDir - directory relative file names resolve against (the config file's)
 * @returns the settings, or null for an `http://` upstream
 * @throws ConfigFileError naming the key path (`upstreams.<name>.tls.ca_file: cannot read ...`) when a file
 *   cannot be read
 */
export function upstreamTls(
  name: string,
  cfg: UpstreamConfig,
  endpointUrl: string,
  baseDir: string,
): UpstreamTls | null {
  const url = new URL(endpointUrl);
  if (url.protocol !== "https:") return null;
  const t = cfg.tls;
  const read = (key: "ca_file" | "cert_file" | "key_file"): Buffer | undefined => {
    const file = t?.[key];
    if (file === undefined) return undefined;
    try {
      return readFileSync(path.resolve(baseDir, file));
    } catch (err) {
      throw new ConfigFileError(
        ["upstreams", name, "tls", key],
        `cannot read ${file}: ${(err as Error).message}`,
      );
    }
  };
  const out: UpstreamTls = {
    // SNI must not be an IP address (RFC 6066 §3); "" makes Node check the certificate against it.
    servername: t?.servername ?? (isIP(url.hostname.replace(/^\[|\]$/g, "")) ? "" : url.hostname),
    rejectUnauthorized: t?.reject_unauthorized ?? true,
  };
  const ca = read("ca_file");
  const cert = read("cert_file");
  const key = read("key_file");
  if (ca !== undefined) out.ca = ca;
  if (cert !== undefined) out.cert = cert;
  if (key !== undefined) out.key = key;
  return out;
}
