/**
 * The pino logger: JSON on stdout, asynchronous writes (no synchronous logging on the hot path),
 * and `redact` for every place a credential could appear.
 */
import { createRequire } from "node:module";
import { prettyMessage } from "./pretty-line.js";
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

/** `log.format`: JSON lines (production), or pino-pretty's coloured text (development). */
export type LogFormat = "json" | "pretty";

/**
 * A destination that turns the JSON lines written to it (the logger's and the access lines) into
 * pino-pretty's text on `destination`. Loaded only when asked for: production never pays for it.
 * @param destination - where the text goes; default stdout
 * @param details - an access line's other fields too (the `debug` level), see `pretty-line.ts`
 */
export function prettyDestination(
  destination: DestinationStream | number = 1,
  details = false,
): DestinationStream {
  const require = createRequire(import.meta.url);
  const pretty = require("pino-pretty") as (o: Record<string, unknown>) => DestinationStream;
  return pretty({
    destination,
    sync: false,
    translateTime: "SYS:HH:MM:ss.l",
    ignore: "service",
    hideObject: true,
    messageFormat: prettyMessage(details),
  });
}

/**
 * The gateway's logger. Access lines bypass it (see `AccessLog`) but go to the same destination.
 * @param level - pino level name
 * @param destination - where lines go; default an async stdout destination (4 KiB buffer)
 * @param base - fields of every line after `service` (a cluster worker's `pid`, SPEC §15)
 * @param format - `pretty` writes pino-pretty's text instead of JSON (`log.format`) @default "json"
 */
export function createLogger(
  level: string,
  destination?: DestinationStream,
  base: Record<string, string | number> = {},
  format: LogFormat = "json",
): Logger {
  const json = destination ?? pino.destination({ dest: 1, sync: false, minLength: 4096 });
  const dest = format === "pretty" ? prettyDestination(json, level === "debug" || level === "trace") : json;
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

/**
 * Drops what `logger` has not written yet and stops its destination, for a process whose output
 * nobody reads any more (a cluster worker whose primary died). pino flushes its destination
 * synchronously when the process exits (pino 10.4.0 `lib/tools.js` `autoEnd`), and sonic-boom's
 * `flushSync` retries `EAGAIN` for ever (sonic-boom 4.2.1 `index.js`), so a write that cannot
 * complete kept such a worker from ever exiting; `autoEnd` skips a destroyed destination.
 * @param logger - a logger made by {@link createLogger} (its destination is read from pino)
 */
export function abandonOutput(logger: Logger): void {
  const own = logger as unknown as Record<symbol, unknown>;
  const stream = own[pino.symbols.streamSym] as { destroy?: () => void; destroyed?: boolean } | undefined;
  if (stream?.destroyed === false) stream.destroy?.();
}
