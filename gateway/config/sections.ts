/**
 * The sections of a document the schema refused as a whole that are valid by themselves, so the
 * files they name are still checked in the same pass (issue 27: `gateway check` reported the
 * schema's problems, then the references', then the files' in three runs).
 */
import type { z } from "zod";
import { gatewayConfigSchema, type GatewayConfig } from "./schema.js";

/**
 * @param raw - the interpolated document
 * @returns a configuration holding the valid ones of `listen`, `auth`, `rate_limits` and each
 *   valid entry of `upstreams` (the sections that name files); the others are empty. Only for
 *   checks that read those sections.
 */
export function validSections(raw: unknown): GatewayConfig {
  const doc = raw !== null && typeof raw === "object" ? (raw as Record<string, unknown>) : {};
  const shape = gatewayConfigSchema.shape;
  const section = (key: "listen" | "auth" | "rate_limits"): unknown => {
    const r = (shape[key] as z.ZodType).safeParse(doc[key]);
    return r.success ? r.data : {};
  };
  const upstreams: Record<string, unknown> = {};
  const entry = (shape.upstreams as unknown as { valueType: z.ZodType }).valueType;
  if (doc.upstreams !== null && typeof doc.upstreams === "object") {
    for (const [name, u] of Object.entries(doc.upstreams)) {
      const r = entry.safeParse(u);
      if (r.success) upstreams[name] = r.data;
    }
  }
  return {
    listen: section("listen"),
    auth: section("auth"),
    rate_limits: section("rate_limits"),
    upstreams,
  } as unknown as GatewayConfig;
}

/** Marks an array element for removal (elements are dropped after a pass, so indexes hold). */
const GONE = Symbol("removed");

/**
 * Deletes the value at `path` in `doc` (with `keys`, those keys of it). True when something was
 * removed. A missing value stays missing: removing what holds it (an upstream, a class) would make
 * the references to it look broken.
 */
function remove(doc: unknown, path: readonly PropertyKey[], keys?: readonly string[]): boolean {
  if (keys !== undefined) return keys.some((k) => remove(doc, [...path, k]));
  if (path.length === 0) return false;
  let at: unknown = doc;
  for (const segment of path.slice(0, -1)) {
    if (at === null || typeof at !== "object") return false;
    at = (at as Record<PropertyKey, unknown>)[segment];
  }
  const last = path[path.length - 1]!;
  if (at === null || typeof at !== "object" || !(last in at)) return false;
  const holder = at as Record<PropertyKey, unknown>;
  if (Array.isArray(holder)) holder[last as number] = GONE;
  else delete holder[last];
  return true;
}

/** Drops the elements {@link remove} marked, in place. */
function sweep(value: unknown): unknown {
  if (Array.isArray(value)) return value.filter((v) => v !== GONE).map(sweep);
  if (value !== null && typeof value === "object") {
    const o = value as Record<string, unknown>;
    for (const k of Object.keys(o)) o[k] = sweep(o[k]);
  }
  return value;
}

/**
 * The cross-field problems (`custom` issues: a route naming an unknown upstream, an unknown default
 * class) that zod did not look for because a value was refused (an object's refinements are
 * skipped after an aborting issue inside it): the document is parsed again without the failing
 * values, at most three times, so they are reported in the same pass as the type errors.
 * @param raw - the interpolated document
 * @param issues - the first parse's issues
 */
export function laterCustomIssues(raw: unknown, issues: readonly z.core.$ZodIssue[]): z.core.$ZodIssue[] {
  let doc: unknown = structuredClone(raw ?? {});
  const found: z.core.$ZodIssue[] = [];
  const gone: (readonly PropertyKey[])[] = [];
  let current = issues;
  for (let round = 0; round < 3; round++) {
    let removed = false;
    for (const i of current) {
      // A refused record key (a class name) names an entry others refer to: keep it. A cross-field
      // problem (`custom`) points at the object that holds the fields: removing it would make the
      // references to it look broken.
      if (i.path.length === 0 || i.code === "invalid_key" || i.code === "custom") continue;
      if (remove(doc, i.path, i.code === "unrecognized_keys" ? i.keys : undefined)) {
        removed = true;
        gone.push(i.path);
      }
    }
    if (!removed) break;
    doc = sweep(doc);
    const r = gatewayConfigSchema.safeParse(doc);
    if (r.success) break;
    // A problem of an object some of whose values were removed may be the removal's doing (an
    // upstream whose refused `url` was removed now has neither `url` nor `endpoints`).
    const own = (i: z.core.$ZodIssue): boolean => !gone.some((g) => startsWith(g, i.path));
    found.push(...r.error.issues.filter((i) => i.code === "custom" && own(i)));
    current = r.error.issues;
  }
  return found;
}

/** `path` begins with `prefix`. */
function startsWith(path: readonly PropertyKey[], prefix: readonly PropertyKey[]): boolean {
  return prefix.length <= path.length && prefix.every((p, i) => p === path[i]);
}
