/**
 * A logger for in-process gateways whose lines the test can read, access lines included: they are
 * written in chunks of many lines straight to the logger's destination, so the destination splits
 * them, and {@link CapturedLog.accessLines} flushes the gateway's buffer first.
 */
import type { Logger } from "pino";
import type { AccessLine } from "../../gateway/observability/access-log.js";
import { createLogger } from "../../gateway/observability/logger.js";
import type { TestGateway } from "./gateway.js";
import { logLines } from "./log-lines.js";
import type { RequestScope } from "../../gateway/core/scope.js";

/** What {@link captureLog} returns. */
export interface CapturedLog {
  /** Pass as `startGateway(config, { logger })`. */
  logger: Logger;
  /** Every line so far, parsed. */
  lines: Record<string, unknown>[];
  /** The access lines of `gw` so far (its buffer flushed first). */
  accessLines(gw: TestGateway): AccessLine[];
}

/** @param level - pino level of the logger (access lines need `info` or below) */
export function captureLog(level = "info"): CapturedLog {
  const { destination, lines } = logLines();
  const logger = createLogger(level, destination);
  return {
    logger,
    lines,
    accessLines(gw) {
      gw.gateway.flushAccessLog();
      return lines.filter((l) => l.msg === "request") as unknown as AccessLine[];
    },
  };
}

/** `scope` as the observers get it once finished: status and duration (ms) recorded, observers not run. */
export function finishedScope(scope: RequestScope, status: number, durationMs: number): RequestScope {
  scope.status = status;
  scope.durationMs = durationMs;
  return scope;
}
