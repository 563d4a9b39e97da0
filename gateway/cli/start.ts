/**
 * `gateway start` (SPEC §9): load the configuration, then serve it with one process or, with
 * `workers` > 1, a node:cluster group (SPEC §15). Every failure to start is one JSON `fatal` line
 * and a non-zero exit: no configuration named (exit 2; the bundled demo is never a
 * default), an invalid one, a file it names that cannot be used, a port that cannot be bound.
 *
 * Signals (single process): SIGTERM/SIGINT stop gracefully (exit 0); SIGHUP reloads the file, and
 * so does a change of it or of a file it names while `reload.watch` is on (SPEC §20).
 */
import cluster from "node:cluster";
import type { Logger } from "pino";
import { runPrimary } from "../cluster/primary.js";
import { runWorker } from "../cluster/worker.js";
import { ConfigFollower } from "../config/follow.js";
import { ConfigError, loadConfig, type LoadedConfig } from "../config/load.js";
import { workerCount } from "../config/workers-schema.js";
import { ListenError } from "../server/listen.js";
import { createGateway, type Gateway, type ReloadTrigger } from "../server/server.js";
import { captureProcessOutput, startLogger } from "./process-log.js";

/** Exit status of a start without a configuration (a usage error). */
const NO_CONFIG = 2;

/**
 * @param file - `--config`, else `GATEWAY_CONFIG`, else undefined
 * @returns the exit status when the gateway did not start; -1 when it serves (the process then
 *   lives until a signal)
 */
export async function runStart(file: string | undefined): Promise<number> {
  if (cluster.isWorker) {
    captureProcessOutput(startLogger());
    runWorker(); // configured by its primary, never from the file
    return -1;
  }
  const log = startLogger();
  captureProcessOutput(log);
  if (file === undefined) {
    log.fatal(
      "no configuration: pass --config FILE or set GATEWAY_CONFIG (the demo runs with `npm run demo`)",
    );
    return NO_CONFIG;
  }
  const loaded = load(file, log);
  if (loaded === null) return 1;
  if (workerCount(loaded.config.workers) > 1) {
    runPrimary(file, loaded);
    return -1;
  }
  let gateway: Gateway;
  try {
    gateway = createGateway(loaded);
  } catch (err) {
    log.fatal({ file, err: { message: (err as Error).message } }, "gateway could not start");
    // Whatever it opened before the failure (a Redis connection) must not keep the process alive.
    process.exit(1);
  }
  try {
    await gateway.listen();
  } catch (err) {
    const fields = err instanceof ListenError ? err.toFields() : {};
    gateway.logger.fatal({ ...fields, err: { message: (err as Error).message } }, "gateway could not start");
    // Redis connections and timers would keep the process alive with nothing listening.
    gateway.logger.flush(() => process.exit(1));
    return -1;
  }
  handleSignals(gateway, gateway.logger, file, loaded.baseDir);
  return -1;
}

function load(file: string, log: Logger): LoadedConfig | null {
  try {
    return loadConfig(file);
  } catch (err) {
    if (err instanceof ConfigError) log.fatal({ file, problems: err.problems }, err.message);
    else log.fatal({ file, err: { message: (err as Error).message } }, `cannot load ${file}`);
    return null;
  }
}

function handleSignals(gateway: Gateway, logger: Logger, file: string, baseDir: string): void {
  let stopping = false;
  // SPEC §20: after each reload the watch follows the configuration in force.
  const reload = (trigger: ReloadTrigger): void =>
    void gateway.reload(file, trigger).then(() => follower.update(gateway.runtime.config, baseDir));
  const follower = new ConfigFollower(file, logger, () => reload("watch"));
  follower.update(gateway.runtime.config, baseDir);
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    follower.close();
    logger.info({ signal }, "shutting down");
    gateway.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGHUP", () => reload("SIGHUP"));
}
