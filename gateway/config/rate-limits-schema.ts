/**
 * The `rate_limits` section (SPEC §4, §7, §10, §19, §22): store, classes (with their shared
 * `budgets`, `cost` and `charge`), the anonymous class, and whose budget a call spends: `identity`,
 * `plan_claim`, `default_plan`, `plans` and `consumers`.
 *
 * Cross-field checks of the section (an unknown default class or plan, a plan naming an unknown
 * class) live in {@link rateLimitsSchema}'s `superRefine`, so they are reported with their key
 * paths even when another section of the file has problems too.
 */
import { z } from "zod";
import { parseUtcOffset, PERIODS } from "./calendar-periods.js";
import { httpMethod, positiveInt } from "./primitives.js";

/** A sliding window (`window_s`, SPEC §4) or a calendar one (`period`, SPEC §19): exactly one. */
const windowSchema = z
  .strictObject({
    limit: positiveInt.describe("Requests admitted per window."),
    window_s: positiveInt.optional().describe("Sliding window length (s); or `period`."),
    period: z
      .enum(PERIODS)
      .optional()
      .describe(
        "Calendar period: minute, hour, day, week (from Monday) or month (from the 1st), starting at 00:00 of `rate_limits.quota_utc_offset`; or `window_s`.",
      ),
  })
  .superRefine((w, ctx) => {
    if ((w.window_s === undefined) === (w.period === undefined)) {
      ctx.addIssue({
        code: "custom",
        message: `expected exactly one of \`window_s\` (sliding) and \`period\` (calendar), received ${w.window_s === undefined ? "neither" : "both"}`,
      });
    }
  });

/** One or more windows (a class, the anonymous class, `auth.guard`). */
export const windowsSchema = z.array(windowSchema).min(1, { error: "expected at least one window" });

/** Whose budget a call spends (SPEC §10). */
const identitySchema = z
  .enum(["subject", "client"])
  .describe(
    "subject: sub, else client_id, else username (one budget per user); client: client_id, else sub, else username (one budget per OAuth client).",
  );

/** A budget shared by the callers whose token carries one claim value (SPEC §22). */
const budgetSchema = z.strictObject({
  key: z
    .string()
    .regex(/^claim:[^\s:{}]+$/, {
      error: "expected `claim:<name>`: the token claim whose value the budget is shared by",
    })
    .describe("`claim:<name>`: callers whose token has the same value of that claim share the budget."),
  windows: windowsSchema,
});

/** A class's (or a plan entry's) shared budgets. */
const budgetsSchema = z
  .array(budgetSchema)
  .describe("Shared budgets (e.g. per organisation) a call counts in besides its own windows.");

const planEntryObject = z.strictObject({ windows: windowsSchema, budgets: budgetsSchema.optional() });

/** A plan's entry for a class, as parsed. */
type PlanEntry = z.output<typeof windowsSchema> | z.output<typeof planEntryObject>;

/**
 * A plan's entry for a class: its windows, or `{ windows, budgets }` (SPEC §10, §22). Parsed by
 * the shape it has (a list or a mapping), so a bad window is reported at its own key path
 * (`rate_limits.plans.pro.read[1].period`) rather than as a failed union.
 */
const planEntrySchema = z.unknown().transform((v, ctx): PlanEntry => {
  const r = (Array.isArray(v) ? windowsSchema : planEntryObject).safeParse(v);
  if (r.success) return r.data;
  for (const issue of r.error.issues) ctx.addIssue({ ...issue, input: issue.input } as never);
  return z.NEVER;
});

/** An HTTP field name (RFC 9110 §5.1 token). */
const fieldName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, { error: "expected a header name" });

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
  charge: z
    .strictObject({
      header: fieldName.describe("Upstream answer header whose integer value is charged, then removed."),
      max: positiveInt.describe("Largest charge one answer may make (larger values are capped)."),
    })
    .optional()
    .describe("More units, reported by the upstream's answer; never refused."),
});

const redisSchema = z
  .strictObject({
    url: z.string().optional().describe("Standalone: redis://[:password@]host:port[/db]."),
    cluster: z.array(z.string()).min(1).optional().describe("Cluster seed nodes (redis:// URLs)."),
    sentinels: z.array(z.string()).min(1).optional().describe("Sentinel addresses (redis:// URLs)."),
    name: z.string().optional().describe("Sentinel master name."),
    password: z.string().optional().describe("Password for Cluster/Sentinel data nodes."),
    key_prefix: z.string().min(1).default("rl").describe("Prefix of every limiter key."),
    command_timeout_ms: positiveInt
      .default(100)
      .describe("Time a limiter call may wait for Redis before failing over (ms)."),
  })
  .superRefine((r, ctx) => {
    const kinds = [r.url, r.cluster, r.sentinels].filter((v) => v !== undefined).length;
    if (kinds !== 1) {
      ctx.addIssue({ code: "custom", message: "expected exactly one of `url`, `cluster` or `sentinels`" });
    }
    if (r.sentinels !== undefined && r.name === undefined) {
      ctx.addIssue({ code: "custom", path: ["name"], message: "required with `sentinels`" });
    }
  });

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
        max_keys: positiveInt.default(100_000).describe("Memory store: identities x classes kept (LRU)."),
      })
      .prefault({}),
    failure_mode: z.enum(["open", "closed"]).default("open").describe("Behaviour while Redis fails."),
    expected_replicas: positiveInt.default(1).describe("Divides limits while failing open."),
    status_path: z
      .string()
      .regex(/^\//)
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
  .superRefine((rl, ctx) => {
    const classes = Object.keys(rl.classes);
    const dc = rl.default_class;
    if (dc !== undefined && !classes.includes(dc)) {
      ctx.addIssue({ code: "custom", path: ["default_class"], message: `unknown class "${dc}"`, input: dc });
    }
    if (classes.includes("anonymous")) {
      ctx.addIssue({
        code: "custom",
        path: ["classes", "anonymous"],
        message: "the name `anonymous` is reserved for `rate_limits.anonymous`",
      });
    }
    const plans = Object.keys(rl.plans);
    const unknownPlan = (name: string) =>
      `unknown plan "${name}" (${plans.length === 0 ? "no plans are configured" : `known: ${plans.join(", ")}`})`;
    for (const [plan, overrides] of Object.entries(rl.plans)) {
      if (plan === "none") {
        ctx.addIssue({
          code: "custom",
          path: ["plans", plan],
          message: "the name `none` is reserved: it is the `plan` label of callers without a plan",
        });
      }
      for (const cls of Object.keys(overrides)) {
        if (cls === "anonymous") {
          ctx.addIssue({
            code: "custom",
            path: ["plans", plan, cls],
            message: "the anonymous class has no plans (its windows are `rate_limits.anonymous`)",
          });
        } else if (!classes.includes(cls)) {
          ctx.addIssue({
            code: "custom",
            path: ["plans", plan, cls],
            message: `unknown class "${cls}" (known: ${classes.join(", ")})`,
          });
        }
      }
    }
    for (const [cls, c] of Object.entries(rl.classes)) {
      checkBudgets(ctx, ["classes", cls, "budgets"], c.budgets);
      checkCost(ctx, ["classes", cls, "windows"], c.windows, c.cost);
      c.budgets?.forEach((b, i) =>
        checkCost(ctx, ["classes", cls, "budgets", i, "windows"], b.windows, c.cost),
      );
    }
    for (const [plan, overrides] of Object.entries(rl.plans)) {
      for (const [cls, entry] of Object.entries(overrides)) {
        const cost = rl.classes[cls]?.cost;
        if (cost === undefined) continue;
        if (Array.isArray(entry)) {
          checkCost(ctx, ["plans", plan, cls], entry, cost);
          continue;
        }
        checkCost(ctx, ["plans", plan, cls, "windows"], entry.windows, cost);
        checkBudgets(ctx, ["plans", plan, cls, "budgets"], entry.budgets);
        entry.budgets?.forEach((b, i) =>
          checkCost(ctx, ["plans", plan, cls, "budgets", i, "windows"], b.windows, cost),
        );
      }
    }
    if (rl.default_plan !== undefined && !plans.includes(rl.default_plan)) {
      ctx.addIssue({ code: "custom", path: ["default_plan"], message: unknownPlan(rl.default_plan) });
    }
    rl.consumers.forEach((c, i) => {
      if (c.sub === undefined && c.client_id === undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["consumers", i],
          message: "expected `sub` and/or `client_id`",
        });
      }
      if (!plans.includes(c.plan)) {
        ctx.addIssue({ code: "custom", path: ["consumers", i, "plan"], message: unknownPlan(c.plan) });
      }
    });
  });

type Issues = z.core.$RefinementCtx;
type Path = (string | number)[];

/** Two budgets of one class (or plan entry) with the same key would count one level twice. */
function checkBudgets(ctx: Issues, path: Path, budgets: readonly { key: string }[] | undefined): void {
  if (!Array.isArray(budgets)) return;
  const seen = new Map<string, number>();
  budgets.forEach((b, i) => {
    const first = seen.get(b.key);
    if (first === undefined) seen.set(b.key, i);
    else {
      ctx.addIssue({
        code: "custom",
        path: [...path, i, "key"],
        message: `"${b.key}" is already the key of budget [${first}]`,
        input: b.key,
      });
    }
  });
}

/** A call costing more than a window's limit could never be admitted (SPEC §22). */
function checkCost(ctx: Issues, path: Path, windows: readonly { limit: number }[], cost: number): void {
  if (!Array.isArray(windows)) return;
  windows.forEach((w, i) => {
    // A limit refused by its own schema is reported there, once.
    if (Number.isInteger(w?.limit) && w.limit > 0 && cost > w.limit) {
      ctx.addIssue({
        code: "custom",
        path: [...path, i, "limit"],
        message: `${w.limit} is below the class's cost ${cost}: no call could ever be admitted`,
        input: w.limit,
      });
    }
  });
}
