/**
 * The windows of a class, a plan or a budget (SPEC §4, §19), and what SPEC §22 adds to a class:
 * shared `budgets` (each keyed by `claim:<name>`), `cost`, `charge`, a plan's entry as windows or
 * `{ windows, budgets }`, and the cross-field checks of costs and budget keys, each naming its key
 * path.
 */
import { z } from "zod";
import { PERIODS } from "./calendar-periods.js";
import { configIssueMessage } from "./issue-messages.js";
import { withAlternatives } from "./key-paths.js";
import { positiveInt } from "./primitives.js";

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
    const message = windowProblem(w);
    if (message !== undefined) ctx.addIssue({ code: "custom", message });
  });

/**
 * A window's own cross-field check, on the raw window too (`cross-checks.ts`): exactly one of
 * `window_s` and `period`.
 * @returns the message, or undefined when the window has exactly one
 */
export function windowProblem(w: { window_s?: unknown; period?: unknown }): string | undefined {
  if ((w.window_s === undefined) !== (w.period === undefined)) return undefined;
  return `expected exactly one of \`window_s\` (sliding) and \`period\` (calendar), received ${w.window_s === undefined ? "neither" : "both"}`;
}

/** One or more windows (a class, the anonymous class, `auth.guard`). */
export const windowsSchema = z.array(windowSchema).min(1, { error: "expected at least one window" });

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
export const budgetsSchema = z
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
export const planEntrySchema = withAlternatives(
  z.unknown().transform((v, ctx): PlanEntry => {
    // The file's error map here too: these issues are copied out with their messages made.
    const r = (Array.isArray(v) ? windowsSchema : planEntryObject).safeParse(v, {
      error: configIssueMessage,
    });
    if (r.success) return r.data;
    for (const issue of r.error.issues) ctx.addIssue({ ...issue, input: issue.input } as never);
    return z.NEVER;
  }),
  [windowsSchema, planEntryObject],
);

/** An HTTP field name (RFC 9110 §5.1 token). */
const fieldName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, { error: "expected a header name" });

/** Units charged by the upstream's answer (SPEC §22). */
export const chargeSchema = z
  .strictObject({
    header: fieldName.describe("Upstream answer header whose integer value is charged, then removed."),
    max: positiveInt.describe("Largest charge one answer may make (larger values are capped)."),
  })
  .describe("More units, reported by the upstream's answer; never refused.");

/** A class as far as these checks read it. */
interface CostedClass {
  windows: readonly { limit: number }[];
  budgets?: readonly { key: string; windows: readonly { limit: number }[] }[] | undefined;
  cost: number;
}

/**
 * SPEC §22's cross-field checks: two budgets of a class (or plan entry) with one key, and a cost
 * above a window's limit (the class's, its budgets', its plans').
 */
export function checkBudgetsAndCosts(
  ctx: Issues,
  classes: Readonly<Record<string, CostedClass>>,
  plans: Readonly<Record<string, Readonly<Record<string, PlanEntry>>>>,
): void {
  for (const [cls, c] of Object.entries(classes)) {
    checkBudgets(ctx, ["classes", cls, "budgets"], c.budgets);
    checkCost(ctx, ["classes", cls, "windows"], c.windows, c.cost);
    c.budgets?.forEach((b, i) =>
      checkCost(ctx, ["classes", cls, "budgets", i, "windows"], b.windows, c.cost),
    );
  }
  for (const [plan, overrides] of Object.entries(plans)) {
    for (const [cls, entry] of Object.entries(overrides)) {
      const cost = classes[cls]?.cost;
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
}

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
