/**
 * `gateway check --config FILE` (SPEC §9): validates a configuration and the files it
 * names in one pass and prints its routes, classes and plans; exit 0 when valid, 1 listing every
 * problem with its key path. An unset `${ENV}` reference is a warning (the deployment sets it),
 * a problem with `--strict`. With `--connect`, each thing the file names is tried, one line per
 * attempt, and any failure makes the exit status 1.
 */
import { ConfigError, loadConfig, type ConfigProblem, type LoadedConfig } from "../config/load.js";
import { describeConfig } from "./describe-config.js";
import { formatProbe, probeAll } from "./connect/index.js";
import { checkFiles } from "../server/config-files.js";

/** Options of {@link runCheck}. */
export interface CheckOptions {
  /** An unset `${ENV}` reference is a problem, not a warning. */
  strict: boolean;
  /** Also try what the file names (Redis, the identity provider, upstreams, TLS files). */
  connect: boolean;
}

function where(p: ConfigProblem): string {
  return p.line === undefined ? "" : ` (line ${p.line}, col ${p.col})`;
}

/** @returns the exit status: 0 valid (and, with `connect`, everything answered), 1 not */
export async function runCheck(file: string, options: CheckOptions): Promise<number> {
  const warnings: ConfigProblem[] = [];
  let loaded: LoadedConfig;
  try {
    loaded = loadConfig(file, process.env, {
      checkFiles,
      unsetEnv: options.strict ? "error" : "warn",
      warnings,
    });
  } catch (err) {
    console.error(
      err instanceof ConfigError ? err.message : `cannot load ${file}: ${(err as Error).message}`,
    );
    return 1;
  }
  for (const w of warnings) {
    console.error(
      `warning: ${w.path}: ${w.message}${where(w)}; set it where the gateway runs (--strict fails)`,
    );
  }
  console.log(`${file}: OK\n${describeConfig(loaded.config)}`);
  if (!options.connect) return 0;
  console.log("connect:");
  const results = await probeAll(loaded);
  for (const r of results) console.log(`  ${formatProbe(r)}`);
  const failed = results.filter((r) => !r.ok).length;
  if (failed > 0) console.error(`${failed} of ${results.length} attempts failed`);
  return failed > 0 ? 1 : 0;
}
