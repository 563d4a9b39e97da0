/** What every runtime is built with (`buildRuntime`): injected, no module singletons. */
import type { Logger } from "pino";
import type { Clock } from "../base/clock.js";
import type { GatewayMetrics } from "../observability/metrics.js";

/** Shared dependencies (injected; no module singletons). */
export interface RuntimeDeps {
  clock: Clock;
  metrics: GatewayMetrics;
  logger: Logger;
  /** Directory relative paths in the config resolve against. */
  baseDir: string;
}
