/**
 * `log.format: pretty` (development): one line per log line. An access line reads as
 * `GET /v1/user 200 3.1ms alice read remaining=99` (a refusal adds its window: `window=month`), its
 * other fields only at `debug`; every other
 * line is its message followed by its fields as compact JSON. pino-pretty's `messageFormat`, with
 * its multi-line object printing off (`hideObject`).
 */

/** Fields every line has, which pino-pretty prints itself or that say nothing in development. */
const STANDARD = new Set(["level", "time", "msg", "service", "pid", "hostname"]);
/** The access line's fields that make up its summary. */
const SUMMARY = new Set([
  ...STANDARD,
  "method",
  "path",
  "status",
  "durationMs",
  "identity",
  "class",
  "remaining",
  "window",
]);

/**
 * Builds pino-pretty's `messageFormat` function.
 * @param details - add an access line's other fields (its route, endpoint, request id, ...) as JSON
 */
export function prettyMessage(
  details: boolean,
): (log: Record<string, unknown>, messageKey: string) => string {
  return function prettyLine(log, messageKey) {
    const msg = String(log[messageKey] ?? "");
    if (msg === "request") {
      const ms = typeof log.durationMs === "number" ? `${log.durationMs.toFixed(1)}ms` : "-";
      const head = `${str(log.method)} ${str(log.path)} ${str(log.status)} ${ms} ${str(log.identity)} ${str(log.class)} remaining=${str(log.remaining)}${log.window === undefined ? "" : ` window=${str(log.window)}`}`;
      return details ? `${head} ${rest(log, SUMMARY)}` : head;
    }
    const fields = rest(log, STANDARD);
    return fields === "{}" ? msg : `${msg} ${fields}`;
  };
}

function str(v: unknown): string {
  return v === null || v === undefined ? "-" : String(v);
}

function rest(log: Record<string, unknown>, skip: ReadonlySet<string>): string {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(log)) if (!skip.has(k)) out[k] = v;
  return JSON.stringify(out);
}
