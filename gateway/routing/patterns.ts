/**
 * Path patterns of limit classes (SPEC §7): a pattern matches its path and everything below it at a
 * segment boundary; `*` stands for exactly one non-empty segment. Compiled once to a RegExp.
 */

const REGEX_SPECIAL = /[.+?^${}()|[\]\\]/g;

/**
 * Compiles a pattern such as `/v1/spaces/* /export` into an anchored RegExp.
 * @example compilePathPattern("/v1/search").test("/v1/search/x") === true
 */
export function compilePathPattern(pattern: string): RegExp {
  const trimmed = pattern.length > 1 && pattern.endsWith("/") ? pattern.slice(0, -1) : pattern;
  const body = trimmed
    .split("/")
    .map((seg) => (seg === "*" ? "[^/]+" : seg.replace(REGEX_SPECIAL, "\\$&")))
    .join("/");
  return trimmed === "/" ? /^\// : new RegExp(`^${body}(?:/|$)`);
}

/** True when `prefix` covers `path` at a segment boundary (`/v1` covers `/v1` and `/v1/x`, not `/v10`). */
export function coversPrefix(prefix: string, path: string): boolean {
  if (!path.startsWith(prefix)) return false;
  return path.length === prefix.length || prefix.endsWith("/") || path.charCodeAt(prefix.length) === 47;
}
