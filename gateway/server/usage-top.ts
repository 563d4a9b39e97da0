/**
 * `GET /usage/top?class=<c>&period=<p>&n=<N>` (SPEC §21): the N identities with the most calls in
 * the current period of a class's calendar window, exact (the limiter's own counts,
 * `ratelimit/top-callers.ts`). Admin listener only: the usage handler (`usage-admin.ts`) answers it
 * behind `admin.token_file`'s token like every `/usage` path (404 without a token file, 401 without
 * the token), and this module computes the answer.
 *
 * Answers: 200 `{"class":"read","period":"month","top":[{"identity":"sub:alice","used":9000}]}`;
 * 400 naming the parameter (unknown class, a period the class has no calendar window of, an `n`
 * not an integer from 1 to 100); 503 when the store cannot answer.
 */
import type { Period } from "../config/calendar-periods.js";
import type { GatewayConfig } from "../config/schema.js";
import { MAX_TOP, type TopCallersReader } from "../ratelimit/top-callers.js";

/** The path of the route. */
export const USAGE_TOP_PATH = "/usage/top";

/** Default N. */
const DEFAULT_TOP = 10;

/** An answer: status and JSON body. */
export interface JsonAnswer {
  status: number;
  body: unknown;
}

/**
 * The calendar periods each class counts in: its own windows' and every plan's windows for it
 * (a plan may add a monthly quota the class lacks).
 */
export function calendarPeriodsByClass(config: GatewayConfig): Map<string, Set<Period>> {
  const rl = config.rate_limits;
  const out = new Map<string, Set<Period>>();
  const add = (cls: string, windows: readonly { period?: Period | undefined }[] | undefined): void => {
    for (const w of windows ?? []) if (w.period !== undefined) out.get(cls)?.add(w.period);
  };
  for (const [cls, c] of Object.entries(rl.classes)) {
    out.set(cls, new Set());
    add(cls, c.windows);
  }
  for (const plan of Object.values(rl.plans)) {
    for (const [cls, entry] of Object.entries(plan)) add(cls, Array.isArray(entry) ? entry : entry.windows);
  }
  return out;
}

/**
 * The answer to one query; never throws.
 * @param periods - {@link calendarPeriodsByClass} of the configuration in force
 */
export async function topCallers(
  reader: TopCallersReader,
  periods: ReadonlyMap<string, ReadonlySet<Period>>,
  query: URLSearchParams,
): Promise<JsonAnswer> {
  const cls = query.get("class") ?? "";
  const known = periods.get(cls);
  if (known === undefined)
    return problem(400, `class: unknown class "${cls}" (known: ${[...periods.keys()].join(", ")})`);
  const p = query.get("period");
  let period: Period;
  if (p === null && known.size === 1) period = [...known][0]!;
  else if (p !== null && known.has(p as Period)) period = p as Period;
  else {
    const list = known.size === 0 ? "none" : [...known].join(", ");
    return problem(400, `period: expected a calendar period of class "${cls}" (its periods: ${list})`);
  }
  const nText = query.get("n");
  const n = nText === null ? DEFAULT_TOP : Number(nText);
  if (!Number.isInteger(n) || n < 1 || n > MAX_TOP)
    return problem(400, `n: expected an integer from 1 to ${MAX_TOP}`);
  try {
    return { status: 200, body: { class: cls, period, top: await reader.top(cls, period, n) } };
  } catch {
    return problem(503, "Rate limit service unavailable");
  }
}

function problem(status: number, message: string): JsonAnswer {
  return { status, body: errorBody(status, message) };
}

function errorBody(code: number, message: string): unknown {
  return { error: { code, message } };
}
