/**
 * `${ENV}` interpolation of the parsed YAML (SPEC §7) and the `LOG_LEVEL` override, before the
 * schema sees the document.
 */

/** A `${NAME}` reference whose variable is not set (and has no `:-default`). */
export interface UnsetReference {
  /** Where it is in the document. */
  segments: PropertyKey[];
  name: string;
}

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/**
 * Replaces `${NAME}` and `${NAME:-default}` in every string of `value`.
 * @param unset - receives each reference whose variable is not set
 * @param keepUnset - leave an unset reference's text in place (`gateway check`: a placeholder the
 *   schema still judges, so `${SECRET}` passes as a string and `${REDIS_URL}` is named in the URL
 *   problem) rather than the empty string (`start`: the value is missing)
 */
export function interpolate(
  value: unknown,
  env: NodeJS.ProcessEnv,
  at: PropertyKey[],
  unset: UnsetReference[],
  keepUnset = false,
): unknown {
  if (typeof value === "string") {
    return value.replace(ENV_REF, (ref, name: string, fallback: string | undefined) => {
      const v = env[name];
      if (v !== undefined) return v;
      if (fallback !== undefined) return fallback;
      unset.push({ segments: [...at], name });
      return keepUnset ? ref : "";
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, env, [...at, i], unset, keepUnset));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = interpolate(v, env, [...at, k], unset, keepUnset);
    return out;
  }
  return value;
}

/**
 * The `LOG_LEVEL` environment variable in place of `log.level` (issue 27: a level for one run or one
 * pod without editing the file), validated by the schema like the file's own value.
 */
export function withLogLevel(raw: unknown, level: string | undefined): unknown {
  if (level === undefined || level === "" || raw === null || typeof raw !== "object") return raw;
  const doc = raw as Record<string, unknown>;
  const log = doc.log;
  if (log !== undefined && (log === null || typeof log !== "object")) return raw; // the schema says why
  // Operators write WARN as often as warn: pino's level names are lower case.
  return { ...doc, log: { ...(log as object | undefined), level: level.toLowerCase() } };
}
