#!/usr/bin/env node
/**
 * The `gateway` command's entry (the package's `bin`). It makes the process's garbage-collector
 * setting first (`cli/gc-tuning.ts`), then loads the gateway: the command itself is
 * `cli/command.ts`. The rest is loaded with a dynamic `import()` so that V8's flag is set before
 * any other module is parsed; set after the module graph had loaded, it made things worse.
 */
import { tuneGarbageCollector } from "./cli/gc-tuning.js";

tuneGarbageCollector();
await import("./cli/command.js").catch((err: unknown) => {
  // The command's own failures are JSON lines (cli/command.ts); so is failing to load it.
  console.error(JSON.stringify({ level: "fatal", msg: err instanceof Error ? err.message : String(err) }));
  process.exitCode = 1;
});
