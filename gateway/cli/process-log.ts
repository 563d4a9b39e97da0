/**
 * The lines a starting gateway writes before its own logger exists, and those Node.js itself would
 * write as plain text (every line on stdout and stderr is JSON, so a log pipeline never
 * meets a line it cannot parse): a missing or invalid configuration, a process warning, an
 * exception nothing caught.
 */
import pino, { type Logger } from "pino";
import { createLogger } from "../observability/logger.js";

const LEVELS = new Set(["fatal", "error", "warn", "info", "debug", "trace", "silent"]);

/**
 * A synchronous JSON logger on stdout at `LOG_LEVEL` (else `info`), for the lines written before
 * the configuration is loaded or after the process is past saving. Synchronous: the process may
 * exit right after the line.
 */
export function startLogger(env: NodeJS.ProcessEnv = process.env): Logger {
  const level = env.LOG_LEVEL !== undefined && LEVELS.has(env.LOG_LEVEL) ? env.LOG_LEVEL : "info";
  return createLogger(level, pino.destination({ dest: 1, sync: true }));
}

/**
 * Routes Node.js's own output through `logger`: process warnings (printed as text on stderr by
 * default) become `warn` lines, and an uncaught exception or unhandled rejection a `fatal` line
 * before the process exits 1 (Node would print a stack trace as text).
 */
export function captureProcessOutput(logger: Logger): void {
  process.removeAllListeners("warning");
  process.on("warning", (w) =>
    logger.warn({ warning: { name: w.name, message: w.message } }, "process warning"),
  );
  const die = (err: unknown, origin: string): void => {
    const e = err instanceof Error ? { message: err.message, stack: err.stack } : { message: String(err) };
    logger.fatal({ err: e, origin }, "gateway stopped by an unexpected error");
    process.exit(1);
  };
  process.on("uncaughtException", (err) => die(err, "uncaughtException"));
  process.on("unhandledRejection", (err) => die(err, "unhandledRejection"));
}
