/**
 * The configured webhooks (SPEC §21 `notifications.webhooks`), ready to sign: each secret file is
 * read when a configuration is built, so a reload (SIGHUP, `reload.watch`) reads it again and the
 * next deliveries are signed with the new key.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { ConfigFileError } from "../../config/finding.js";
import type { GatewayConfig } from "../../config/schema.js";

/** One webhook, its key read. */
export interface WebhookTarget {
  url: string;
  /** HMAC-SHA256 key: the secret file's content without its trailing newline. */
  secret: Buffer;
  /** The fractions this webhook wants (SPEC §21). */
  thresholds: ReadonlySet<number>;
  /** Time the receiver has to answer one POST (ms). */
  timeoutMs: number;
}

/**
 * @param baseDir - the configuration file's directory (relative paths resolve against it)
 * @returns the webhooks of `notifications`, none without it
 * @throws ConfigFileError at `notifications.webhooks[<i>].secret_file` for a file that cannot be
 *   read or is empty (the message names the file, never its content)
 */
export function loadWebhooks(config: GatewayConfig, baseDir: string): WebhookTarget[] {
  return (config.notifications?.webhooks ?? []).map((w, i) => {
    const file = path.resolve(baseDir, w.secret_file);
    const segments = ["notifications", "webhooks", i, "secret_file"];
    let text: string;
    try {
      text = readFileSync(file, "utf8").replace(/\r?\n$/, "");
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code ?? String(err);
      throw new ConfigFileError(segments, `cannot read "${w.secret_file}" (${file}): ${reason}`, {
        cause: err,
      });
    }
    if (text === "") throw new ConfigFileError(segments, `"${w.secret_file}" (${file}) is empty`);
    return Object.freeze({
      url: w.url,
      secret: Buffer.from(text, "utf8"),
      thresholds: new Set(w.thresholds),
      timeoutMs: w.timeout_ms,
    });
  });
}
