/**
 * A log destination for an in-process gateway that parses every line it receives and lets a test
 * wait for a line by predicate (access lines arrive in chunks, at the latest within a second).
 */
import { EventEmitter } from "node:events";
import type { DestinationStream } from "pino";

/** A parsed log line. */
export type LogLine = Record<string, unknown>;

/** Collected lines and a wait for the next matching one. */
export interface LogLines {
  readonly destination: DestinationStream;
  readonly lines: LogLine[];
  /**
   * @returns the first line (already received or arriving within `timeoutMs`) that `match` accepts
   * @throws Error after `timeoutMs` without one
   */
  waitFor(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
}

/** @returns a destination to pass to `createLogger`, and its lines */
export function logLines(): LogLines {
  const lines: LogLine[] = [];
  const arrivals = new EventEmitter();
  const destination: DestinationStream = {
    write(chunk: string) {
      for (const l of chunk.split("\n")) {
        if (l === "") continue;
        const line = JSON.parse(l) as LogLine;
        lines.push(line);
        arrivals.emit("line", line);
      }
    },
  };
  return {
    destination,
    lines,
    waitFor(match, timeoutMs = 3000) {
      const found = lines.find(match);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          arrivals.off("line", onLine);
          reject(new Error(`no matching log line within ${timeoutMs} ms`));
        }, timeoutMs);
        const onLine = (line: LogLine): void => {
          if (!match(line)) return;
          clearTimeout(timer);
          arrivals.off("line", onLine);
          resolve(line);
        };
        arrivals.on("line", onLine);
      });
    },
  };
}
