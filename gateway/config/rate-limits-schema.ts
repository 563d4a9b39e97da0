/**
 * The `rate_limits` section (SPEC §4, §7, §10, §19, §22): store, classes (with their shared
 * `budgets`, `cost` and `charge`), the anonymous class, and whose budget a call spends: `identity`,
 * `plan_claim`, `default_plan`, `plans` and `consumers`.
 *
 * Cross-field checks of the section (an unknown default class or plan, a plan naming an unknown
 * class) are `rate-limits-references.ts`, run on the raw document, so they are reported with their
 * key paths beside any shape error; the budgets' and costs' checks (SPEC §22) stay in
 * {@link rateLimitsSchema}'s `superRefine`.
 */
import { z } from "zod";
import { parseUtcOffset } from "./calendar-periods.js";
import type { CrossProblem } from "./loose.js";
import { durationMs, httpMethod, lruCapacity, positiveInt } from "./primitives.js";
import {
  budgetsSchema,
  chargeSchema,
  checkBudgetsAndCosts,
  planEntrySchema,
  windowsSchema,
} from "./windows-schema.js";

/** Whose budget a call spends (SPEC §10). */
const identitySchema = z
  .enum(["subject", "client"])
  .describe(
    "subject: sub, else client_id, else username (one budget per user); client: client_id, else sub, else username (one budget per OAuth client).",
  );

const classSchema = z.strictObject({
  match: z
    .strictObject({
      methods: z.array(httpMethod).min(1).optional().describe("HTTP methods; any when absent."),
      paths: z
        .array(z.string().regex(/^\//, { error: "expected a path pattern starting with /" }))
        .min(1)
        .optional()
        .describe("Path patterns; `*` is one segment; a pattern covers everything below it."),
    })
    .default({}),
  algorithm: z
    .enum(["sliding_window", "sliding_log"])
    .default("sliding_window")
    .describe("sliding_window: weighted counters, constant memory; sliding_log: exact."),
  mode: z.enum(["enforce", "shadow"]).default("enforce").describe("shadow: count and report, never reject."),
  windows: windowsSchema,
  identity: identitySchema
    .optional()
    .describe("Whose budget this class spends; `rate_limits.identity` when absent."),
  budgets: budgetsSchema.optional(),
  cost: positiveInt.default(1).describe("Units a call spends in every window it counts in."),
  charge: chargeSchema.optional(),
});

const redisSchema = z
  .strictObject({
    url: z.string().optional().describe("Standalone: redis://[:password@]host:port[/db]."),
    cluster: z.array(z.string()).min(1).optional().describe("Cluster seed nodes (redis:// URLs)."),
    sentinels: z.array(z.string()).min(1).optional().describe("Sentinel addresses (redis:// URLs)."),
    name: z.string().optional().describe("Sentinel master name."),
    password: z.string().optional().describe("Password for Cluster/Sentinel data nodes."),
    key_prefix: z.string().min(1).default("rl").describe("Prefix of every limiter key."),
    command_timeout_ms: durationMs
      .default(100)
      .describe("Time a limiter call may wait for Redis before failing over (ms)."),
  })
  .superRefine((r, ctx) => {
    for (const p of redisProblems(r)) ctx.addIssue({ code: "custom", path: p.path, message: p.message });
  });

/**
 * `rate_limits.store.redis`'s own cross-field checks, on the raw mapping too (`cross-checks.ts`):
 * one kind of deployment, and a Sentinel master name.
 * @returns problems with their paths below `rate_limits.store.redis`
 */
export function redisProblems(r: Record<string, unknown>): CrossProblem[] {
  const out: CrossProblem[] = [];
  const kinds = [r.url, r.cluster, r.sentinels].filter((v) => v !== undefined).length;
  if (kinds !== 1) out.push({ path: [], message: "expected exactly one of `url`, `cluster` or `sentinels`" });
  if (r.sentinels !== undefined && r.name === undefined) {
    out.push({ path: ["name"], message: "required with `sentinels`" });
  }
  return out;
}

/** Plan names are label values and log fields: short, printable, never `none`. */
const planName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, {
  error: "expected a plan name (letters, digits, `_` and `-`; at most 64)",
});

const consumerSchema = z.strictObject({
  sub: z.string().min(1).optional().describe("Matches tokens whose `sub` equals it."),
  client_id: z.string().min(1).optional().describe("Matches tokens whose `client_id` equals it."),
  plan: z.string().min(1).describe("The plan of the callers this entry matches."),
});

/** The `rate_limits` section. */
export const rateLimitsSchema = z
  .strictObject({
    store: z
      .strictObject({ redis: redisSchema.optional() })
      .default({})
      .describe("Omit `redis` for the in-process memory store."),
    memory: z
      .strictObject({
        max_keys: lruCapacity.default(100_000).describe("Memory store: identities x classes kept (LRU)."),
      })
      .prefault({}),
    failure_mode: z.enum(["open", "closed"]).default("open").describe("Behaviour while Redis fails."),
    expected_replicas: positiveInt.default(1).describe("Divides limits while failing open."),
    status_path: z
      .string()
      .regex(/^\//, { error: "expected a path starting with / (or null)" })
      .nullable()
      .default("/rate_limit")
      .describe("Authenticated status endpoint; null disables it."),
    classes: z
      .record(
        z.string().regex(/^[a-z][a-z0-9_]*$/, { error: "expected a lower-case class name" }),
        classSchema,
      )
      .refine((c) => Object.keys(c).length > 0, { error: "expected at least one class" }),
    default_class: z
      .string()
      .optional()
      .describe("Class for calls no `match` selects; the last class when absent."),
    anonymous: z
      .strictObject({ windows: windowsSchema })
      .default({ windows: [{ limit: 60, window_s: 3600 }] })
      .describe("Windows for unauthenticated calls, keyed by client IP."),
    identity: identitySchema.default("subject"),
    top_callers: z
      .boolean()
      .default(true)
      .describe(
        "Keep each class's top callers per calendar period (SPEC §21 `GET /usage/top`); false saves the sorted sets.",
      ),
    quota_utc_offset: z
      .string()
      .default("+00:00")
      .refine((o) => parseUtcOffset(o) !== undefined, {
        error: "expected a UTC offset `±HH:MM` from -12:00 to +14:00",
      })
      .describe("Where calendar periods (`period`) start: local midnight of this UTC offset."),
    plan_claim: z
      .string()
      .min(1)
      .optional()
      .describe(
        "Token member naming the caller's plan (introspection response, static-file field, JWT claim).",
      ),
    default_plan: z
      .string()
      .min(1)
      .optional()
      .describe(
        "Plan of callers with no consumers entry and no usable claim; none (the classes' windows) when absent.",
      ),
    plans: z
      .record(planName, z.record(z.string(), planEntrySchema))
      .default({})
      .describe(
        "Per plan, per class: windows that replace the class's windows, or `{ windows, budgets }` replacing its budgets too.",
      ),
    consumers: z
      .array(consumerSchema)
      .default([])
      .describe(
        "Explicit plan assignments by `sub` and/or `client_id`; first match wins, before `plan_claim`.",
      ),
  })
  .superRefine((rl, ctx) => checkBudgetsAndCosts(ctx, rl.classes, rl.plans));
