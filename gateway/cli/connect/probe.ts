/**
 * One attempt of `gateway check --connect` (issue 27 §3): what was tried and what answered, so a
 * platform engineer sees from one run whether the file's Redis, identity provider and upstreams are
 * reachable with the settings it holds. Never a secret: passwords are masked in what is printed.
 */
import type { Milliseconds } from "../../base/clock.js";

/** The result of one attempt. */
export interface ProbeResult {
  ok: boolean;
  /** What was tried, e.g. `redis redis://:***@cache:6379/2`. */
  what: string;
  /** What answered, e.g. `AUTH ok, SELECT 2 ok, PING answered PONG` or the refusal. */
  answer: string;
  /**
   * It answered, but something the operator should change (a Redis that persists nothing under
   * calendar quotas, SPEC §19): printed as `warn`, without failing the check.
   */
  warning?: string;
}

/** How long any one attempt may take when the configuration gives no bound (ms). */
export const PROBE_TIMEOUT_MS: Milliseconds = 5_000;

/** A URL with its password masked, for printing. */
export function maskUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== "") u.password = "***";
    return u.toString().replace(/\/$/, "");
  } catch {
    return url;
  }
}

/** What an error says: its system code (`ECONNREFUSED`, `ENOTFOUND`, `CERT_HAS_EXPIRED`) and message. */
export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  return typeof code === "string" && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
}

/** Rejects with `message` after `ms` unless `work` settles first. */
export function within<T>(work: Promise<T>, ms: Milliseconds, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
