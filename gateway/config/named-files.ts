/**
 * The files a configuration names (the static tokens file, the API listener's TLS files, each
 * upstream's TLS files, each webhook's secret), and the hash that identifies an applied configuration (SPEC §20: a fleet's
 * versions can be compared in its reload lines and `gateway_config_info{hash}`).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import type { GatewayConfig } from "./schema.js";

/** @returns the absolute paths of the files `config` names, each once */
export function namedFiles(config: GatewayConfig, baseDir: string): string[] {
  const files = [
    config.auth.static?.tokens_file,
    config.admin.token_file,
    config.listen.tls?.cert_file,
    config.listen.tls?.key_file,
    config.listen.tls?.client_ca_file,
    ...(config.notifications?.webhooks ?? []).map((w) => w.secret_file),
    ...Object.values(config.upstreams).flatMap((u) => [u.tls?.ca_file, u.tls?.cert_file, u.tls?.key_file]),
  ];
  return [...new Set(files.filter((f) => f !== undefined).map((f) => path.resolve(baseDir, f)))];
}

/**
 * 12 hex digits of the SHA-256 of the validated configuration (as JSON, after `${ENV}`
 * interpolation and defaults) and of the content of every file it names: equal on two gateways
 * exactly when they run the same settings, whatever the YAML's layout or comments.
 */
export function configHash(config: GatewayConfig, baseDir: string): string {
  const h = createHash("sha256").update(JSON.stringify(config));
  for (const file of namedFiles(config, baseDir)) {
    h.update(`\0${file}\0`);
    try {
      h.update(readFileSync(file));
    } catch {
      h.update("(unreadable)");
    }
  }
  return h.digest("hex").slice(0, 12);
}

/** The hash of a loaded configuration: the one computed when it was read, else from its content. */
export function hashOf(loaded: { config: GatewayConfig; baseDir: string; hash?: string }): string {
  return loaded.hash ?? configHash(loaded.config, loaded.baseDir);
}
