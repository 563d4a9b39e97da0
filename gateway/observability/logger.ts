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
 * The gateway's logger. Access lines bypass it (see `AccessLog`) but go to the same destination.
 * @param level - pino level name
 * @param destination - where lines go; default an async stdout destination (4 KiB buffer)
 * @param base - fields of every line after `service` (a cluster worker's `pid`, SPEC §15)
 */
export function createLogger(
  level: string,
  destination?: DestinationStream,
  base: Record<string, string | number> = {},
): Logger {
  const dest = destination ?? pino.destination({ dest: 1, sync: false, minLength: 4096 });
  return pino(
    {
      level,
      base: { service: "gateway", ...base },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label: string) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    },
    dest,
  );
}
