/**
 * The cross-field checks of `rate_limits` (SPEC §10, §19): names that must refer to a class or a
 * plan of the same section, and the reserved names. They read the raw document, so an unknown
 * class is reported beside a shape error of the section, not after it is fixed (SPEC §7).
 */
import { at, list, mapping, names, text, type CrossProblem } from "./loose.js";

/**
 * @param doc - the whole document as written
 * @returns problems with their paths from the top of the document
 */
export function rateLimitProblems(doc: unknown): CrossProblem[] {
  const rl = mapping(at(doc, "rate_limits"));
  if (rl === undefined) return [];
  const out: CrossProblem[] = [];
  const add = (path: (string | number)[], message: string, atKey?: true) =>
    out.push({ path: ["rate_limits", ...path], message, ...(atKey && { atKey }) });
  const classes = names(rl.classes);
  const dc = text(rl.default_class);
  if (dc !== undefined && mapping(rl.classes) !== undefined && !classes.includes(dc)) {
    add(["default_class"], `unknown class "${dc}" (known: ${classes.join(", ")})`);
  }
  if (classes.includes("anonymous")) {
    add(["classes", "anonymous"], "the name `anonymous` is reserved for `rate_limits.anonymous`", true);
  }
  const plans = names(rl.plans);
  const unknownPlan = (name: string) =>
    `unknown plan "${name}" (${plans.length === 0 ? "no plans are configured" : `known: ${plans.join(", ")}`})`;
  for (const plan of plans) {
    if (plan === "none") {
      add(
        ["plans", plan],
        "the name `none` is reserved: it is the `plan` label of callers without a plan",
        true,
      );
    }
    for (const cls of names(mapping(rl.plans)?.[plan])) {
      if (cls === "anonymous") {
        add(
          ["plans", plan, cls],
          "the anonymous class has no plans (its windows are `rate_limits.anonymous`)",
        );
      } else if (mapping(rl.classes) !== undefined && !classes.includes(cls)) {
        add(["plans", plan, cls], `unknown class "${cls}" (known: ${classes.join(", ")})`, true);
      }
    }
  }
  const dp = text(rl.default_plan);
  if (dp !== undefined && dp !== "" && !plans.includes(dp)) add(["default_plan"], unknownPlan(dp));
  list(rl.consumers)?.forEach((raw, i) => {
    const c = mapping(raw);
    if (c === undefined) return;
    if (c.sub === undefined && c.client_id === undefined) {
      add(["consumers", i], "expected `sub` and/or `client_id`");
    }
    const plan = text(c.plan);
    if (plan !== undefined && plan !== "" && !plans.includes(plan))
      add(["consumers", i, "plan"], unknownPlan(plan));
  });
  return out;
}
