/**
 * The one garbage-collector setting the `gateway` command makes itself (every command, and every
 * cluster worker, which runs the same entry): on V8 before 12 (Node 20), concurrent marking off.
 *
 * Measured (`test/bench/README.md`, "Round three"): on Node 20.20 (V8 11.3) the old generation is
 * marked by background threads while the gateway runs, and while such a cycle is in progress the
 * young collections kept a proxied request's objects (Node's request and response, the scope, the
 * upstream head) alive past the next collection and promoted them: 1.7-2.5 KB promoted per request
 * at 2,500 req/s, young pauses 7-8 ms at p99, p99 latency 7-54 ms. Promotion grows the old
 * generation, which starts the next marking cycle, so once under load the process stays in that
 * state. With concurrent marking off (V8 marks in incremental steps on the main thread instead)
 * the same runs promoted 120-125 bytes per request, young pauses 1.6-1.8 ms, p99 5.6-7.1 ms, at
 * less CPU per request and 20-40 MB less RSS. V8 12 (Node 22, the container image's runtime) and
 * later do not show it (about 300 KB/s promoted at 3,000 req/s, as Node 20 without concurrent
 * marking), and there the flag does harm (Node 22, 3,600 req/s: 0.49 MB/s promoted by default,
 * 7.8-8.7 MB/s with it), so they keep V8's default.
 *
 * When: first of all. `node` refuses the flag in `NODE_OPTIONS`, so the process sets it itself
 * (`v8.setFlagsFromString`), from `main.ts`, which imports nothing else before it and loads the
 * rest of the gateway with a dynamic `import()` afterwards: the flag is set before the module graph
 * is parsed and the heap grows. Set that way (a `--import` preload in the measurement) it measured
 * the same as the flag on the command line (276 against 288-301 KB/s promoted, Redis store, 2,500
 * req/s). Set once the modules had loaded (in `gateway start`, or as the first static import of
 * `main.ts`: ES modules are all parsed before the first one runs) the same runs promoted 1.7-16
 * MB/s, worse than not setting it: V8 promises nothing for a flag changed while a collection may be
 * under way. A `node` flag naming concurrent marking (or `--single-threaded-gc`)
 * on the command line is the operator's choice and is left alone: run
 * `node --concurrent-marking dist/gateway/main.js start …` to keep V8's default on Node 20 (the
 * `gateway` bin and `npm start` pass no `node` flags, and `NODE_OPTIONS` refuses this one).
 */
import v8 from "node:v8";

/** The flag set on V8 before {@link FIXED_IN_V8_MAJOR}. */
const GC_FLAG = "--no-concurrent-marking";

/** The first V8 major version that does not need {@link GC_FLAG}. */
const FIXED_IN_V8_MAJOR = 12;

/**
 * Command-line flags that state a choice about concurrent marking, in V8's spellings (`--no-x`,
 * `--nox`, `_` for `-`), or imply one (`--single-threaded`, `--single-threaded-gc`, `--predictable`).
 */
const OPERATOR_CHOICE = /^--(no[-_]?)?(concurrent[-_]marking|single[-_]threaded([-_]gc)?|predictable)(=|$)/;

/**
 * Whether {@link GC_FLAG} applies to a process.
 * @param v8Version - `process.versions.v8`, e.g. "11.3.244.8-node.33"
 * @param execArgv - the process's `node` flags (`process.execArgv`)
 * @returns true on V8 before 12 when no flag in `execArgv` states a choice about concurrent marking
 */
export function needsGcTuning(v8Version: string, execArgv: readonly string[]): boolean {
  const major = Number.parseInt(v8Version, 10);
  if (!Number.isFinite(major) || major >= FIXED_IN_V8_MAJOR) return false;
  return !execArgv.some((a) => OPERATOR_CHOICE.test(a));
}

/**
 * Sets {@link GC_FLAG} on this process when {@link needsGcTuning} says so. Only `main.ts` calls
 * it, before it loads the rest of the gateway (see above).
 * @param v8Version - @default process.versions.v8
 * @param execArgv - @default process.execArgv
 * @returns whether the flag was set
 */
export function tuneGarbageCollector(
  v8Version: string = process.versions.v8,
  execArgv: readonly string[] = process.execArgv,
): boolean {
  if (!needsGcTuning(v8Version, execArgv)) return false;
  v8.setFlagsFromString(GC_FLAG);
  return true;
}
