/**
 * The pino logger: JSON on stdout, asynchronous writes (no synchronous logging on the hot path),
 * and `redact` for every place a credential could appear.
 */
import pino, { type Logger, type DestinationStream } from "pino";

/** Paths pino censors in every line (SPEC §8: tokens and `Authorization` never logged). */
export const REDACT_PATHS = [
  "req.headers.authorization",
  "headers.authorization",
  "*.headers.authorization",
  "authorization",
  "*.authorization",
  "token",
  "*.token",
  "client_secret",
  "*.client_secret",
  "password",
  "*.password",
];

/** The process's loggers: `logger` with `redact` for everything, `access` without it for access lines. */
export interface Loggers {
  logger: Logger;
  /** Writes only hand-built access lines (no headers, no tokens), so it skips the redact pass. */
  access: Logger;
}

/**
 * Both loggers on one destination.
 * @param level - pino level name
 * @param destination - where lines go; default an async stdout destination (4 KiB buffer)
 */
export function createLoggers(level: string, destination?: DestinationStream): Loggers {
  const dest = destination ?? pino.destination({ dest: 1, sync: false, minLength: 4096 });
  const options = {
    level,
    base: { service: "gateway" },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  return {
    logger: pino({ ...options, redact: { paths: REDACT_PATHS, censor: "[redacted]" } }, dest),
    access: pino(options, dest),
  };
}

/** The redacting logger alone (see {@link createLoggers}). */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return createLoggers(level, destination).logger;
}
