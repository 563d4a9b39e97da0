#!/usr/bin/env node
/**
 * The `gateway` command (SPEC §9):
 *   gateway start [--config FILE]   run the gateway (FILE also from GATEWAY_CONFIG; default config/demo.yaml)
 *   gateway check --config FILE     validate a configuration (and the tokens file it names) and
 *                                   print its routes and classes
 * Signals: SIGTERM/SIGINT stop gracefully (exit 0); SIGHUP reloads the file.
 * With `workers` > 1 (SPEC §15) `start` runs a node:cluster primary (`cluster/primary.ts`), which
 * forks this same command as its workers (`cluster/worker.ts`) and takes the signals.
 */
import cluster from "node:cluster";
import { parseArgs } from "node:util";
import { ConfigError, loadConfig, type LoadedConfig } from "./config/load.js";
import { describeConfig } from "./config/describe.js";
import { workerCount } from "./config/workers-schema.js";
import { runPrimary } from "./cluster/primary.js";
import { runWorker } from "./cluster/worker.js";
import { DEFAULT_CONFIG } from "./main-config.js";
import { createGateway } from "./server.js";

const USAGE = `usage: gateway [start|check] [--config FILE]
  start   run the gateway (default); FILE defaults to $GATEWAY_CONFIG, then the bundled demo config
  check   validate FILE (and the tokens file it names) and print its routes and classes`;

/** @param checkFiles - also load and validate the files the configuration names (`check`) */
function load(file: string, checkFiles = false): LoadedConfig | null {
  try {
    return loadConfig(file, process.env, { checkFiles });
  } catch (err) {
    console.error(
      err instanceof ConfigError ? err.message : `cannot load ${file}: ${(err as Error).message}`,
    );
    return null;
  }
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { config: { type: "string", short: "c" }, help: { type: "boolean", short: "h" } },
    });
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const command = parsed.positionals[0] ?? "start";
  if (parsed.values.help) {
    console.log(USAGE);
    return 0;
  }
  const file =
    parsed.values.config ?? process.env.GATEWAY_CONFIG ?? (command === "start" ? DEFAULT_CONFIG : undefined);
  if (file === undefined) {
    console.error(`--config FILE is required\n${USAGE}`);
    return 2;
  }
  if (command === "check") {
    const loaded = load(file, true);
    if (loaded === null) return 1;
    console.log(`${file}: OK\n${describeConfig(loaded.config)}`);
    return 0;
  }
  if (command !== "start") {
    console.error(`unknown command "${command}"\n${USAGE}`);
    return 2;
  }
  if (cluster.isWorker) {
    runWorker(); // configured by its primary, never from the file
    return -1;
  }
  const loaded = load(file);
  if (loaded === null) return 1;
  if (workerCount(loaded.config.workers) > 1) {
    runPrimary(file, loaded);
    return -1;
  }
  const gateway = createGateway(loaded);
  await gateway.listen();
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    gateway.logger.info({ signal }, "shutting down");
    gateway.close().then(
      () => process.exit(0),
      (err: unknown) => {
        gateway.logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGHUP", () => void gateway.reload(file));
  return -1; // keep running
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  },
);
