/**
 * The configuration's key names, read from the zod schema itself (so they can never disagree with
 * it): every key path a user can write, for the README check, and the known keys at one place of a
 * document, for "did you mean" suggestions on an unknown key.
 *
 * Paths are written as the README writes them: `listen.port`, `upstreams.<name>.url` (a record:
 * any name), `routes[].prefix` (an array of objects).
 */
import type { z } from "zod";

/** Schemas parsed by hand (a transform) and the shapes they accept, for the walkers below. */
const alternatives = new WeakMap<z.ZodType, readonly z.ZodType[]>();

/**
 * Declares the shapes a schema that parses by hand accepts (a value that is either a list or a
 * mapping), so its keys are listed and suggested like any other's.
 * @returns `schema`
 */
export function withAlternatives<T extends z.ZodType>(schema: T, shapes: readonly z.ZodType[]): T {
  alternatives.set(schema, shapes);
  return schema;
}

/** Wrappers that hold one inner schema (zod 4 `def.type` → the inner schema). */
function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (;;) {
    const def = s.def as { type: string; innerType?: z.ZodType; in?: z.ZodType };
    if (def.innerType !== undefined) s = def.innerType;
    else if (def.type === "pipe" && def.in !== undefined) s = def.in;
    else return s;
  }
}

/** The object schema's keys, or undefined when `schema` is not an object. */
function shapeOf(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  const s = unwrap(schema);
  return s.def.type === "object" ? (s as z.ZodObject).shape : undefined;
}

/** The schema one level down: a record's values or an array's elements; undefined otherwise. */
function itemOf(schema: z.ZodType): { kind: "record" | "array"; item: z.ZodType } | undefined {
  const s = unwrap(schema);
  if (s.def.type === "record") return { kind: "record", item: (s as z.ZodRecord).valueType as z.ZodType };
  if (s.def.type === "array") return { kind: "array", item: (s as z.ZodArray).element as z.ZodType };
  return undefined;
}

/** One key a user can write: its path and, when the schema has one, its default. */
export interface KeyEntry {
  /** `listen.port`, `upstreams.<name>.url`, `routes[].prefix`. */
  path: string;
  /** Present when the key has a default (`{ value: 8080 }`); absent for required or optional keys. */
  default?: { value: unknown };
}

/** The default of a key's schema, looking through its wrappers. */
function defaultOf(schema: z.ZodType): { value: unknown } | undefined {
  let s = schema;
  for (;;) {
    const def = s.def as { type: string; innerType?: z.ZodType; defaultValue?: unknown };
    if (def.type === "default") return { value: def.defaultValue };
    if (def.innerType === undefined) return undefined;
    s = def.innerType;
  }
}

/**
 * Every leaf key of `schema`, in schema order. A leaf is a key whose value is not an object, a
 * record or an array of objects (`rate_limits.classes.<name>.match.methods` is a leaf: a list of
 * strings).
 * @example keyEntries(gatewayConfigSchema)[1] // { path: "listen.port", default: { value: 8080 } }
 */
export function keyEntries(schema: z.ZodType, prefix = ""): KeyEntry[] {
  const alts = alternatives.get(schema);
  if (alts !== undefined) {
    const seen = new Set<string>();
    return alts.flatMap((a) => keyEntries(a, prefix)).filter((e) => !seen.has(e.path) && seen.add(e.path));
  }
  const shape = shapeOf(schema);
  if (shape !== undefined) {
    return Object.entries(shape).flatMap(([key, child]) => {
      const path = prefix === "" ? key : `${prefix}.${key}`;
      const below = keyEntries(child, path);
      if (below.length > 0) return below;
      const d = defaultOf(child);
      return [d === undefined ? { path } : { path, default: d }];
    });
  }
  const inner = itemOf(schema);
  if (inner === undefined) return [];
  return keyEntries(inner.item, inner.kind === "record" ? `${prefix}.<name>` : `${prefix}[]`);
}

/**
 * The keys an object at `segments` of a document may have.
 * @param segments - a document path (`["upstreams", "docs"]`); numbers index arrays, any string
 *   names a record entry
 * @returns the known keys, or undefined when no object of the schema lies there
 */
export function knownKeysAt(schema: z.ZodType, segments: readonly PropertyKey[]): string[] | undefined {
  let s: z.ZodType | undefined = schema;
  for (const seg of segments) {
    // A hand-parsed value: the alternative of the segment's kind (a mapping's key, a list's index).
    const alts = alternatives.get(s);
    if (alts !== undefined) s = alts.find((a) => (shapeOf(a) !== undefined) === (typeof seg === "string"));
    if (s === undefined) return undefined;
    const shape = shapeOf(s);
    if (shape !== undefined) {
      s = typeof seg === "string" && Object.hasOwn(shape, seg) ? shape[seg] : undefined;
    } else {
      s = itemOf(s)?.item;
    }
    if (s === undefined) return undefined;
  }
  const alts = alternatives.get(s);
  const shape = shapeOf(alts?.find((a) => shapeOf(a) !== undefined) ?? s);
  return shape === undefined ? undefined : Object.keys(shape);
}

/** Optimal-string-alignment distance: insertions, deletions, substitutions, adjacent swaps. */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The known key closest to a misspelt one, when it is close enough to be a likely typo: at most a
 * third of the longer name's characters apart (at least one), case ignored.
 * @example closestKey("algoritm", ["match", "algorithm", "mode", "windows"]) // "algorithm"
 * @returns the suggestion, or undefined when no key is that close (or two are equally close)
 */
export function closestKey(unknown: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  let tie = false;
  for (const k of known) {
    const dist = distance(unknown.toLowerCase(), k.toLowerCase());
    if (dist > Math.max(1, Math.floor(Math.max(unknown.length, k.length) / 3))) continue;
    if (dist < bestDistance) [best, bestDistance, tie] = [k, dist, false];
    else if (dist === bestDistance) tie = true;
  }
  return tie ? undefined : best;
}
