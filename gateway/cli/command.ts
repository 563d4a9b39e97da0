/**
 * The `gateway` command (SPEC §9, usage in `cli/usage.ts`):
 *   gateway start --config FILE     run the gateway (FILE also from GATEWAY_CONFIG; one is required)
 *   gateway check --config FILE     validate a configuration and the files it names
 *   gateway version | --version     the version alone on stdout (SPEC §20)
 *   gateway help | --help
 * With `workers` > 1 (SPEC §15) `start` runs a node:cluster primary (`cluster/primary.ts`), which
 * forks this same command as its workers (`cluster/worker.ts`) and takes the signals.
 * Loaded by `main.ts` once the process's garbage-collector setting is made (`gc-tuning.ts`).
 */
import { parseArgs } from "node:util";
import { runCheck } from "./check.js";
import { runStart } from "./start.js";
import { USAGE } from "./usage.js";
import { VERSION } from "../base/version.js";

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        config: { type: "string", short: "c" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "v" },
        strict: { type: "boolean" },
        connect: { type: "boolean" },
      },
    });
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const command = parsed.positionals[0] ?? "start";
  if (parsed.values.version || command === "version") {
    console.log(VERSION);
    return 0;
  }
  if (parsed.values.help || command === "help") {
    console.log(USAGE);
    return 0;
  }
  const file = parsed.values.config ?? process.env.GATEWAY_CONFIG;
  switch (command) {
    case "start":
      return runStart(file);
    case "check":
      if (file === undefined) {
        console.error(`--config FILE (or GATEWAY_CONFIG) is required\n${USAGE}`);
        return 2;
      }
      return runCheck(file, {
        strict: parsed.values.strict === true,
        connect: parsed.values.connect === true,
      });
    default:
      console.error(`unknown command "${command}"\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err: unknown) => {
    console.error(JSON.stringify({ level: "fatal", msg: err instanceof Error ? err.message : String(err) }));
    process.exitCode = 1;
  },
);
