/**
 * `routes[]` (SPEC §1, §17): a path prefix, the upstream it goes to, the scopes it needs, and its
 * own timeout, body limit and retry policy.
 */
import { z } from "zod";
import { durationMs, nonNegativeInt, positiveInt } from "./primitives.js";

/** What a retry may follow (SPEC §17 `retries.on`): a connection failure or a status of the upstream. */
export const RETRY_CONDITIONS = ["connect_failure", "reset", "timeout"] as const;

const RETRY_ON_MESSAGE = "expected connect_failure, reset, timeout or an HTTP status from 500 to 599";

const retryOn = z.union(
  [
    z.enum(RETRY_CONDITIONS),
    z
      .int({ error: RETRY_ON_MESSAGE })
      .min(500, { error: RETRY_ON_MESSAGE })
      .max(599, { error: RETRY_ON_MESSAGE }),
  ],
  { error: RETRY_ON_MESSAGE },
);

const retriesSchema = z.strictObject({
  attempts: positiveInt.default(2).describe("Retries after the first try."),
  on: z
    .array(retryOn)
    .min(1, { error: "expected at least one condition" })
    .default(["connect_failure", "reset", "timeout", 502, 503, 504])
    .describe("Failures retried: connect_failure, reset, timeout (of one try) and upstream statuses."),
  per_try_timeout_ms: durationMs
    .optional()
    .describe("Time one try has until the response head (ms); the route's timeout_ms, else the upstream's."),
  backoff: z
    .strictObject({
      base_ms: durationMs.default(25).describe("Retry n waits a random time up to base_ms × 2^(n-1) (ms)."),
      max_ms: durationMs.default(250).describe("Longest wait before a retry (ms)."),
    })
    .prefault({})
    .describe("Full-jitter exponential backoff between tries."),
});

export const routeSchema = z.strictObject({
  prefix: z
    .string()
    .regex(/^\/[^?#]*$/, { error: "expected a path prefix starting with /" })
    .describe("Path prefix, matched at a segment boundary; longest prefix wins."),
  upstream: z.string().min(1).describe("Name of an entry of `upstreams`."),
  scopes: z
    .array(z.string().min(1))
    .default([])
    .describe("OAuth scopes the token must all carry (403 insufficient_scope otherwise)."),
  strip_prefix: z.boolean().default(false).describe("Remove the prefix before forwarding."),
  timeout_ms: durationMs
    .optional()
    .describe("Time from the first try to a response head, over every try and backoff (ms); 504 after."),
  max_body_bytes: nonNegativeInt
    .optional()
    .describe("Largest request body (bytes), replacing `listen.max_body_bytes`; 413 above, 0 = no limit."),
  retries: retriesSchema.optional().describe("Retries of failed tries; none without it."),
});

/** One route as configured. */
export type RouteConfig = z.output<typeof routeSchema>;
/** A route's retry policy as configured. */
export type RetriesConfig = z.output<typeof retriesSchema>;
