/**
 * `--connect` for the TLS files the configuration names (`listen.tls`, `upstreams.<n>.tls`): each
 * is read; a certificate or CA bundle is parsed and its first certificate's subject and validity
 * shown (an expired or not yet valid one fails); a key is only said to be read, never shown.
 */
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import type { GatewayConfig } from "../../config/schema.js";
import { errorText, type ProbeResult } from "./probe.js";

/** Each TLS file setting: its key path, the file, and whether it holds certificates. */
function tlsFiles(config: GatewayConfig): { key: string; file: string; certificate: boolean }[] {
  const out: { key: string; file: string; certificate: boolean }[] = [];
  const add = (key: string, file: string | undefined, certificate: boolean): void => {
    if (file !== undefined) out.push({ key, file, certificate });
  };
  const l = config.listen.tls;
  add("listen.tls.cert_file", l?.cert_file, true);
  add("listen.tls.key_file", l?.key_file, false);
  add("listen.tls.client_ca_file", l?.client_ca_file, true);
  for (const [name, u] of Object.entries(config.upstreams)) {
    add(`upstreams.${name}.tls.ca_file`, u.tls?.ca_file, true);
    add(`upstreams.${name}.tls.cert_file`, u.tls?.cert_file, true);
    add(`upstreams.${name}.tls.key_file`, u.tls?.key_file, false);
  }
  return out;
}

/**
 * @param nowMs - the time certificates must be valid at (ms since the epoch)
 * @returns one result per file
 */
export function probeTlsFiles(config: GatewayConfig, baseDir: string, nowMs = Date.now()): ProbeResult[] {
  return tlsFiles(config).map(({ key, file, certificate }) => {
    const resolved = path.resolve(baseDir, file);
    const what = `${key} ${resolved}`;
    let pem: Buffer;
    try {
      pem = readFileSync(resolved);
    } catch (err) {
      return { ok: false, what, answer: errorText(err) };
    }
    if (!certificate) return { ok: true, what, answer: `read (${pem.length} bytes)` };
    try {
      const cert = new X509Certificate(pem);
      const from = Date.parse(cert.validFrom);
      const to = Date.parse(cert.validTo);
      const valid = nowMs >= from && nowMs <= to;
      const when = nowMs > to ? "expired" : nowMs < from ? "not yet valid" : "valid";
      return {
        ok: valid,
        what,
        answer: `certificate ${cert.subject.replace(/\n/g, ", ")}, ${when} (${cert.validFrom} to ${cert.validTo})`,
      };
    } catch (err) {
      return { ok: false, what, answer: `not a PEM certificate: ${errorText(err)}` };
    }
  });
}
