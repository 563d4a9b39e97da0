/**
 * `workers` (SPEC §15): how many processes serve the API port. One: no primary, the gateway runs
 * in this process. More, or `auto` (one per core the process may use, `os.availableParallelism()`):
 * a node:cluster primary and that many workers. The memory store counts per process, so more than
 * one worker needs the shared Redis store.
 */
import os from "node:os";
import { z } from "zod";
import { positiveInt } from "./primitives.js";

/** `workers`: a positive integer or `auto`. */
export const workersSchema = z
  .union([positiveInt, z.literal("auto")], { error: "expected a positive integer or auto" })
  .default(1)
  .describe("Processes serving the API port: 1 (no primary), n, or auto (one per available core).");

/** The configured value. */
export type WorkersSetting = z.output<typeof workersSchema>;

/**
 * The number of worker processes `workers` asks for on this machine.
 * @param available - cores this process may use @default os.availableParallelism()
 */
export function workerCount(setting: WorkersSetting, available = os.availableParallelism()): number {
  return setting === "auto" ? available : setting;
}

/**
 * The cross-field check: more than one worker (or `auto`, which may be) without a shared store.
 * @returns the message for the `workers` key path, or null when the combination is valid
 */
export function workersWithoutRedis(setting: WorkersSetting, hasRedis: boolean): string | null {
  if (setting === 1 || hasRedis) return null;
  return (
    "more than one worker needs `rate_limits.store.redis`: the memory store counts in each process, " +
    "so every worker would admit the whole limit (auto counts as more than one)"
  );
}
