/**
 * The body of `PUT /overrides/<identity>` (SPEC §21): `{"classes":{"<class>":[windows]},
 * "expires_at":EPOCH_S}`, validated with the configuration file's own windows schema, so an override
 * can hold exactly what a plan's entry can. Every problem is named by its member path
 * (`classes.read[0].limit: expected a positive integer`), all of them at once.
 */
import { z } from "zod";
import { configIssueMessage } from "./issue-messages.js";
import { formatPath } from "./load.js";
import { positiveInt } from "./primitives.js";
import { windowsSchema } from "./windows-schema.js";

const overrideBodySchema = z.strictObject({
  classes: z
    .record(z.string(), windowsSchema)
    .refine((c) => Object.keys(c).length > 0, { error: "expected at least one class" }),
  expires_at: positiveInt.optional(),
});

/** A valid override body. */
export type OverrideBody = z.output<typeof overrideBodySchema>;

/** What the body's checks read of the configuration: each limit class's cost (SPEC §22). */
export type ClassCosts = Readonly<Record<string, number>>;

/**
 * Validates an override body.
 * @param body - the parsed JSON
 * @param classes - the configuration's classes (the anonymous class cannot be overridden)
 * @param nowS - the time (epoch s): an `expires_at` not after it is refused
 * @returns the body, or every problem as `<member path>: <message>`
 */
export function parseOverrideBody(
  body: unknown,
  classes: ClassCosts,
  nowS: number,
): { ok: true; value: OverrideBody } | { ok: false; problems: string[] } {
  const r = overrideBodySchema.safeParse(body, { error: configIssueMessage });
  const problems: string[] = [];
  const raw = (body as { classes?: unknown } | null)?.classes;
  const names = raw !== null && typeof raw === "object" && !Array.isArray(raw) ? Object.keys(raw) : [];
  for (const name of names) {
    if (classes[name] === undefined) {
      const known = Object.keys(classes).join(", ");
      problems.push(`${formatPath(["classes", name])}: not a limit class of the configuration (${known})`);
    }
  }
  if (!r.success) {
    for (const i of r.error.issues) {
      const where = formatPath(i.path);
      problems.push(where === "" ? i.message : `${where}: ${i.message}`);
    }
    return { ok: false, problems };
  }
  for (const [name, windows] of Object.entries(r.data.classes)) {
    const cost = classes[name];
    if (cost === undefined) continue;
    windows.forEach((w, i) => {
      if (w.limit < cost)
        problems.push(
          `${formatPath(["classes", name, i, "limit"])}: ${w.limit} is below the class's cost ${cost}: no call could ever be admitted`,
        );
    });
  }
  const e = r.data.expires_at;
  if (e !== undefined && e <= nowS) problems.push(`expires_at: ${e} is not in the future`);
  return problems.length === 0 ? { ok: true, value: r.data } : { ok: false, problems };
}
