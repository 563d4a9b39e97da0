/**
 * The messages of zod's own issues, as a user of the YAML file reads them: "expected a mapping",
 * "expected one of "open", "closed"", never zod's "Invalid input: expected object, received null"
 * (whose "received" the loader would print a second time). A schema's own `error` still wins; this
 * covers the keys that give none.
 */
import type { z } from "zod";

/** What a YAML reader calls each type zod expects. */
const TYPE_NAMES: Readonly<Record<string, string>> = {
  object: "a mapping",
  record: "a mapping",
  map: "a mapping",
  array: "a list",
  string: "a string",
  boolean: "true or false",
  number: "a number",
  int: "an integer",
  null: "null",
};

/** `"open", "closed"`. */
const listOf = (values: readonly unknown[]): string => values.map((v) => JSON.stringify(v)).join(", ");

/**
 * zod 4's per-parse error map (`safeParse(x, { error: configIssueMessage })`).
 * @returns the message, without the value received (the loader appends it)
 */
export function configIssueMessage(issue: z.core.$ZodRawIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return `expected ${TYPE_NAMES[issue.expected] ?? issue.expected}`;
    case "invalid_value":
      return issue.values.length === 1
        ? `expected ${JSON.stringify(issue.values[0])}`
        : `expected one of ${listOf(issue.values)}`;
    case "too_small":
      if (issue.origin === "string") return "expected a non-empty string";
      if (issue.origin === "array" || issue.origin === "set") {
        return `expected a list of at least ${String(issue.minimum)} item${Number(issue.minimum) === 1 ? "" : "s"}`;
      }
      return `expected at least ${String(issue.minimum)}`;
    case "too_big":
      if (issue.origin === "array" || issue.origin === "set") {
        return `expected a list of at most ${String(issue.maximum)} items`;
      }
      return `expected at most ${String(issue.maximum)}`;
    case "invalid_format":
      return issue.pattern === undefined
        ? `expected a string in ${issue.format} format`
        : `expected a string matching ${issue.pattern}`;
    case "invalid_union":
      return "expected one of the forms this key takes (see the README's Configuration reference)";
    default:
      return "invalid value";
  }
}
