/**
 * The API listener's TLS settings (`listen.tls`, SPEC §12), read from their files at start and on
 * every SIGHUP, and checked before use: a file that cannot be read, or a key that does not match its
 * certificate, is an error naming its key path, so a bad rotation never reaches the listener.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { createSecureContext, type SecureContextOptions } from "node:tls";
import { ConfigFileError } from "../config/finding.js";
import type { GatewayConfig } from "../config/schema.js";

/** Options for `tls.createServer` / `setSecureContext`. */
export interface ServerTls extends SecureContextOptions {
  cert: Buffer;
  key: Buffer;
  /** Mutual TLS: ask for, and require, a client certificate signed by `ca`. */
  requestCert: boolean;
  rejectUnauthorized: boolean;
}

/**
 * @param baseDir - directory relative file names resolve against (the config file's)
 * @returns the settings, or null without `listen.tls`
 * @throws ConfigFileError naming the key path: `listen.tls.cert_file: cannot read …`, or
 *   `listen.tls.key_file: does not match listen.tls.cert_file (…)`
 */
export function serverTls(config: GatewayConfig, baseDir: string): ServerTls | null {
  const t = config.listen.tls;
  if (t === undefined) return null;
  const read = (key: "cert_file" | "key_file" | "client_ca_file", file: string): Buffer => {
    try {
      return readFileSync(path.resolve(baseDir, file));
    } catch (err) {
      throw new ConfigFileError(["listen", "tls", key], `cannot read ${file}: ${(err as Error).message}`);
    }
  };
  const out: ServerTls = {
    cert: read("cert_file", t.cert_file),
    key: read("key_file", t.key_file),
    minVersion: t.min_version,
    requestCert: t.client_ca_file !== undefined,
    rejectUnauthorized: t.client_ca_file !== undefined,
  };
  if (t.client_ca_file !== undefined) out.ca = read("client_ca_file", t.client_ca_file);
  try {
    createSecureContext(out);
  } catch (err) {
    const message = (err as Error).message;
    const key =
      /key values mismatch|key_values_mismatch/i.test(message) || /KEY/.test(message)
        ? "key_file"
        : "cert_file";
    const detail = key === "key_file" ? "does not match listen.tls.cert_file" : "not a usable certificate";
    throw new ConfigFileError(["listen", "tls", key], `${detail} (${message})`);
  }
  return out;
}
