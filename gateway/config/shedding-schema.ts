/**
 * Load shedding (SPEC §18): `upstreams.<n>.adaptive_concurrency` (the limit found from latency) and
 * the top-level `load_shedding` block (a caller's priority from its plan, and the share of the
 * limit each priority may fill). Cross-field checks are in {@link sheddingProblems}.
 */
import { z } from "zod";
import { at, mapping, names, num, type CrossProblem } from "./loose.js";
import { positiveInt } from "./primitives.js";

/** The three priorities, most important first. */
export const PRIORITIES = ["critical", "default", "sheddable"] as const;
/** A caller's priority (SPEC §18). */
export type Priority = (typeof PRIORITIES)[number];

const share = z
  .number({ error: "expected a number in (0, 1]" })
  .gt(0, { error: "expected a number in (0, 1]" })
  .max(1, { error: "expected a number in (0, 1]" });

/** `upstreams.<n>.adaptive_concurrency`. */
export const adaptiveConcurrencySchema = z.strictObject({
  min_limit: positiveInt
    .default(5)
    .describe("Lowest the adaptive limit goes (calls in flight, per process)."),
  max_limit: positiveInt
    .default(1000)
    .describe("Highest the adaptive limit goes (calls in flight, per process)."),
  mode: z
    .enum(["enforce", "shadow"])
    .default("enforce")
    .describe("`shadow`: the limit is computed, exported and logged, but no call is shed."),
});

/** `load_shedding`: optional at the top level. */
export const loadSheddingSchema = z.strictObject({
  priorities: z
    .record(z.string().min(1), z.enum(PRIORITIES))
    .default({})
    .describe("Plan name -> `critical`, `default` or `sheddable`; other callers are `default`."),
  shares: z
    .strictObject({
      sheddable: share.default(0.5).describe("Share of the limit `sheddable` calls may fill."),
      default: share.default(0.9).describe("Share of the limit `default` calls may fill."),
      critical: share.default(1.0).describe("Share of the limit `critical` calls may fill."),
    })
    .prefault({})
    .describe("Per priority, the share of the upstream's concurrency limit its calls may fill."),
});

/** `adaptive_concurrency` as configured. */
export type AdaptiveConcurrencyConfig = z.output<typeof adaptiveConcurrencySchema>;
/** `load_shedding` as configured. */
export type LoadSheddingConfig = z.output<typeof loadSheddingSchema>;

/**
 * SPEC §18's cross-field checks, on the raw document (reported beside any shape error): a
 * `load_shedding.priorities` entry naming an unknown plan, and `min_limit` above `max_limit`.
 * @param doc - the whole document as written
 * @returns problems with their paths from the top of the document
 */
export function sheddingProblems(doc: unknown): CrossProblem[] {
  const out: CrossProblem[] = [];
  const plans = names(at(doc, "rate_limits", "plans"));
  for (const plan of names(at(doc, "load_shedding", "priorities"))) {
    if (plans.includes(plan)) continue;
    const known = plans.length === 0 ? "no plans are configured" : `known: ${plans.join(", ")}`;
    out.push({
      path: ["load_shedding", "priorities", plan],
      message: `unknown plan "${plan}" (${known})`,
      atKey: true,
    });
  }
  for (const name of names(at(doc, "upstreams"))) {
    const a = mapping(at(doc, "upstreams", name, "adaptive_concurrency"));
    if (a === undefined) continue;
    const [min, max] = [num(a.min_limit ?? 5), num(a.max_limit ?? 1000)];
    if (min !== undefined && max !== undefined && min > max) {
      out.push({
        path: ["upstreams", name, "adaptive_concurrency", "min_limit"],
        message: `min_limit (${min}) must not exceed max_limit (${max})`,
      });
    }
  }
  return out;
}
