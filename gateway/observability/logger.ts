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

/**
 * @param level - pino level name
 * @param destination - where lines go; default an async stdout destination
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: "gateway" },
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? pino.destination({ dest: 1, sync: false, minLength: 4096 }),
  );
}
