/**
 * The admin token of the usage operations (SPEC §21), read from `admin.token_file`: its first line,
 * trimmed. Only its SHA-256 is kept, and compared with a presented token's digest in constant time
 * (`server/usage-admin.ts`), so the token's length leaks nothing and it is never held as text.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { ConfigFileError } from "./finding.js";
import type { GatewayConfig } from "./schema.js";

const KEY = ["admin", "token_file"] as const;

/**
 * @param baseDir - the configuration file's directory (a relative path resolves against it)
 * @returns the SHA-256 digest of the token, or null without `admin.token_file`
 * @throws ConfigFileError at `admin.token_file` when the file cannot be read or its first line is
 *   empty (the message names the file, never its content)
 */
export function readAdminTokenDigest(config: GatewayConfig, baseDir: string): Buffer | null {
  // `gateway check` passes the sections that validated: `admin` is absent when it did not.
  const file = (config.admin as GatewayConfig["admin"] | undefined)?.token_file;
  if (file === undefined) return null;
  const resolved = path.resolve(baseDir, file);
  let token: string;
  try {
    token = (readFileSync(resolved, "utf8").split(/\r?\n/)[0] ?? "").trim();
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? "unreadable";
    throw new ConfigFileError(KEY, `cannot read "${file}" (${resolved}): ${reason}`, { cause: err });
  }
  if (token === "") throw new ConfigFileError(KEY, `"${file}" holds no token on its first line`);
  return createHash("sha256").update(token).digest();
}
