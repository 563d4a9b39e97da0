/**
 * Small zod schemas shared by the configuration's parts, each with the message a user sees for a
 * wrong value ("expected a positive integer"), and the ranges of SPEC §7: every duration in
 * milliseconds and every count is bounded, so no value that passes validation becomes a timer that
 * fires at once or an allocation that fails at start.
 */
import { METHODS } from "node:http";
import { z } from "zod";
import { closestKey } from "./key-paths.js";

/**
 * The largest delay a Node.js timer honours (ms): `setTimeout` fires a larger one after 1 ms
 * (Node.js docs, `setTimeout`: "When delay is larger than 2147483647 or less than 1, the delay will
 * be set to 1"). Also the largest count the configuration takes (SPEC §7).
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** The most entries an in-memory LRU (limiter keys, token cache) may hold: it allocates its index up front. */
export const MAX_LRU_ENTRIES = 10_000_000;

/** An integer from `min` to `max`; one message for every way a value misses (type, fraction, range). */
function intRange(min: number, max: number, message: string) {
  return z.int({ error: message }).min(min, { error: message }).max(max, { error: message });
}

/** A count: an integer from 1 to {@link MAX_TIMER_MS}. */
export const positiveInt = z
  .int({ error: "expected a positive integer" })
  .positive({ error: "expected a positive integer" })
  .max(MAX_TIMER_MS, { error: `expected a positive integer of at most ${MAX_TIMER_MS}` });

/** A count where 0 has a meaning (none, off): an integer from 0 to {@link MAX_TIMER_MS}. */
export const nonNegativeInt = z
  .int({ error: "expected a non-negative integer" })
  .nonnegative({ error: "expected a non-negative integer" })
  .max(MAX_TIMER_MS, { error: `expected a non-negative integer of at most ${MAX_TIMER_MS}` });

/** A duration (ms) that becomes a timer: an integer from 1 to {@link MAX_TIMER_MS} (SPEC §7). */
export const durationMs = intRange(1, MAX_TIMER_MS, `expected a duration in ms from 1 to ${MAX_TIMER_MS}`);

/** A duration (ms) where 0 turns the timer off: an integer from 0 to {@link MAX_TIMER_MS} (SPEC §7). */
export const durationMsOrOff = intRange(
  0,
  MAX_TIMER_MS,
  `expected a duration in ms from 0 (off) to ${MAX_TIMER_MS}`,
);

/** A duration in seconds that becomes a timer (× 1000 ms): 1 to 2147483 s (SPEC §7). */
export const timerSeconds = intRange(
  1,
  Math.floor(MAX_TIMER_MS / 1000),
  `expected a duration in seconds from 1 to ${Math.floor(MAX_TIMER_MS / 1000)}`,
);

/** The capacity of an in-memory LRU: 1 to {@link MAX_LRU_ENTRIES} entries. */
export const lruCapacity = intRange(
  1,
  MAX_LRU_ENTRIES,
  `expected an integer from 1 to ${MAX_LRU_ENTRIES} (entries kept in memory)`,
);

/** A TCP port, 0 (pick a free one) to 65535. */
export const port = intRange(0, 65535, "expected a port number (0-65535)");

/** Methods Node's HTTP parser knows (RFC 9110 §9, PATCH, WebDAV, ...): any other never arrives. */
const KNOWN_METHODS: ReadonlySet<string> = new Set(METHODS);

/**
 * An HTTP method name, upper-cased; one Node's HTTP parser knows (issue 27: `GETT` was accepted and
 * matched nothing), with a suggestion for a misspelt one.
 */
export const httpMethod = z
  .string()
  .transform((m) => m.toUpperCase())
  .check((ctx) => {
    if (KNOWN_METHODS.has(ctx.value)) return;
    const guess = closestKey(ctx.value, ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
    ctx.issues.push({
      code: "custom",
      input: ctx.value,
      continue: true, // the checks of the objects around it still run (references)
      message:
        `expected an HTTP method name (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, ...)` +
        (guess === undefined ? "" : ` (did you mean "${guess}"?)`),
    });
  });

/**
 * The value a problem prints instead of what it received (`issue.params.received`): a URL whose
 * credentials are masked, so a refused secret never reaches a log or a terminal (SPEC §2).
 */
export interface ReceivedOverride {
  received: string;
}

/**
 * An absolute `http://` or `https://` URL without credentials: `user:pass@` in a URL would never be
 * sent (the gateway authenticates to nothing by URL) yet would be printed by `GET /upstreams` and
 * `gateway check`, so it is refused, and the message masks it.
 */
export const httpUrl = z.string({ error: "expected an http:// or https:// URL" }).check((ctx) => {
  const url = URL.canParse(ctx.value) ? new URL(ctx.value) : undefined;
  if (url === undefined || !/^https?:$/.test(url.protocol)) {
    ctx.issues.push({
      code: "custom",
      input: ctx.value,
      continue: true,
      message: "expected an http:// or https:// URL",
    });
    return;
  }
  if (url.username === "" && url.password === "") return;
  url.username = url.username === "" ? "" : "***";
  url.password = url.password === "" ? "" : "***";
  ctx.issues.push({
    code: "custom",
    input: "(masked)",
    continue: true,
    message: "expected a URL without credentials (user:password@): they are never sent, only printed",
    params: { received: url.href } satisfies ReceivedOverride,
  });
});
