/**
 * A route's retry policy (SPEC §17 `routes[].retries`), compiled once per configuration: which
 * failures are retried, how often, each try's timeout and the backoff between tries.
 */
import type { RetriesConfig } from "./route-schema.js";
import type { UpstreamErrorReason } from "../base/results.js";

/** The compiled `retries` block. */
export interface RetryPolicy {
  /** Retries after the first try. */
  readonly attempts: number;
  /** Connection failures retried (`connect_failure` is `connect`). */
  readonly reasons: ReadonlySet<UpstreamErrorReason>;
  /** Upstream statuses retried. */
  readonly statuses: ReadonlySet<number>;
  /** One try's time to a response head (ms), or 0: the upstream's `timeout_ms` (undici's timer). */
  readonly perTryTimeoutMs: number;
  /** Backoff of retry n: uniform in [0, min(maxMs, baseMs × 2^(n-1))] (ms). */
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
}

/** Methods retried without an `Idempotency-Key` (SPEC §17; RFC 9110 §9.2.2 idempotent methods). */
export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

/** Largest request body kept for replay (bytes, SPEC §17). */
export const REPLAY_MAX_BYTES = 64 * 1024;

/**
 * @param cfg - `routes[].retries`, or undefined (no retries)
 * @param routeTimeoutMs - the route's `timeout_ms` (0 when none): the default per-try timeout
 */
export function compileRetryPolicy(
  cfg: RetriesConfig | undefined,
  routeTimeoutMs: number,
): RetryPolicy | null {
  if (cfg === undefined) return null;
  const reasons = new Set<UpstreamErrorReason>();
  const statuses = new Set<number>();
  for (const on of cfg.on) {
    if (typeof on === "number") statuses.add(on);
    else reasons.add(on === "connect_failure" ? "connect" : on);
  }
  return Object.freeze({
    attempts: cfg.attempts,
    reasons,
    statuses,
    perTryTimeoutMs: cfg.per_try_timeout_ms ?? routeTimeoutMs,
    backoffBaseMs: cfg.backoff.base_ms,
    backoffMaxMs: cfg.backoff.max_ms,
  });
}

/**
 * The part of a route's policy that holds for any method (SPEC §17): a failure to connect, where no
 * byte of the request reached the upstream, so a POST without an `Idempotency-Key` is retried then
 * too, as nginx (`proxy_next_upstream error`) and Envoy (`connect-failure`) do.
 * @returns the policy retrying `connect_failure` alone, or null when the route does not retry it
 */
export function connectOnly(policy: RetryPolicy | null): RetryPolicy | null {
  if (policy === null || !policy.reasons.has("connect")) return null;
  return Object.freeze({
    ...policy,
    reasons: new Set<UpstreamErrorReason>(["connect"]),
    statuses: new Set<number>(),
  });
}

/**
 * Full-jitter exponential backoff (AWS Architecture Blog, "Exponential Backoff and Jitter", 2015).
 * @param retry - 1 for the first retry
 * @param random - uniform in [0, 1)
 * @returns the wait before this retry (ms)
 */
export function backoffMs(policy: RetryPolicy, retry: number, random: number): number {
  return random * Math.min(policy.backoffMaxMs, policy.backoffBaseMs * 2 ** (retry - 1));
}
