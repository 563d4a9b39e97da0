/**
 * Reading a document the schema may have refused: the cross-field checks (`cross-checks.ts`) run on
 * the raw YAML, so a shape error elsewhere never hides an unknown upstream (SPEC §7: `gateway check`
 * lists every problem in one run). Each reader returns undefined for a value of another type.
 */

/** A plain mapping's entries, or undefined. */
export function mapping(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** A list, or undefined. */
export function list(value: unknown): readonly unknown[] | undefined {
  return Array.isArray(value) ? value : undefined;
}

/** A string, or undefined. */
export function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** A finite number, or undefined. */
export function num(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

/** The value at `keys` below `value`, through mappings only. */
export function at(value: unknown, ...keys: string[]): unknown {
  let v = value;
  for (const k of keys) v = mapping(v)?.[k];
  return v;
}

/** The names (keys) of a mapping; empty for anything else. */
export function names(value: unknown): string[] {
  return Object.keys(mapping(value) ?? {});
}

/** A problem found by a cross-field check, its path from the top of the document. */
export interface CrossProblem {
  path: (string | number)[];
  message: string;
  /** The key itself is the problem (an unknown plan named as a key): no value is quoted. */
  atKey?: true;
}
