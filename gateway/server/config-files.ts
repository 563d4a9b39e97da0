/**
 * Checks of the files a configuration names (SPEC §9: `gateway check` validates "a config (and the
 * files it names)"): the static tokens file, the API listener's certificate and key, the
 * upstreams' TLS files, the webhooks' secret files and the admin token file, each loaded exactly as
 * the gateway loads it.
 */
import path from "node:path";
import { loadStaticTokens } from "../auth/static-source.js";
import { TokensFileError } from "../auth/tokens-file.js";
import { upstreamTls } from "../proxy/upstream-tls.js";
import { endpointsOf } from "../config/upstream-schema.js";
import { serverTls } from "../transport/server-tls.js";
import { ConfigFileError, type ConfigFinding } from "../config/finding.js";
import type { GatewayConfig } from "../config/schema.js";
import { budgetClaimsOf } from "../ratelimit/budgets.js";
import { readAdminTokenDigest } from "../config/admin-token.js";
import { loadWebhooks } from "../ratelimit/notifications/webhooks.js";

const TOKENS_FILE = ["auth", "static", "tokens_file"] as const;

/**
 * @param config - a configuration the schema accepted
 * @param baseDir - the configuration file's directory (relative paths resolve against it)
 * @returns one finding per problem, at `auth.static.tokens_file`: `<file>:<line>: <entry>: <message>`
 *   for a bad entry, `cannot read "<file>" (<absolute path>): <reason>` for a missing file
 */
export function checkFiles(config: GatewayConfig, baseDir: string): ConfigFinding[] {
  const found = [...tokensFile(config, baseDir)];
  // The TLS readers throw ConfigFileError; the finding points at its key.
  const tlsCheck = (read: () => unknown): void => {
    try {
      read();
    } catch (err) {
      if (!(err instanceof ConfigFileError)) throw err;
      found.push({ segments: err.segments, message: err.detail });
    }
  };
  tlsCheck(() => serverTls(config, baseDir));
  tlsCheck(() => readAdminTokenDigest(config, baseDir));
  tlsCheck(() => loadWebhooks(config, baseDir)); // SPEC §21: each webhook's secret file
  for (const [name, u] of Object.entries(config.upstreams)) {
    for (const e of endpointsOf(u)) tlsCheck(() => upstreamTls(name, u, e.url, baseDir));
  }
  return found;
}

function tokensFile(config: GatewayConfig, baseDir: string): ConfigFinding[] {
  const file = config.auth.static?.tokens_file;
  if (file === undefined) return [];
  const resolved = path.resolve(baseDir, file);
  try {
    const claim = config.rate_limits.plan_claim;
    const valueClaims = budgetClaimsOf(config);
    loadStaticTokens(resolved, claim === undefined ? valueClaims : [claim, ...valueClaims], valueClaims);
    return [];
  } catch (err) {
    if (!(err instanceof TokensFileError)) throw err;
    if (err.unreadable) {
      return [
        {
          segments: TOKENS_FILE,
          message: `cannot read "${file}" (${resolved}): ${err.problems[0]?.message}`,
        },
      ];
    }
    return err.problems.map((p) => ({
      segments: TOKENS_FILE,
      message: `${file}${p.line === undefined ? "" : `:${p.line}`}: ${p.entry ?? "(root)"}: ${p.message}`,
    }));
  }
}
