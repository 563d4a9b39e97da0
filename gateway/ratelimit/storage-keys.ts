/**
 * The one storage-key function of both stores (SPEC §4, §10): a window's counts belong to the
 * identity (with its kind), the class name, the window length and the algorithm — never to a plan
 * or a limit — so a caller whose limits change (plan, reload) keeps what it has spent, in memory
 * exactly as in Redis.
 *
 * Layout: `<prefix>{<identityKey>}:<class>:<window_s>` plus `:log` for `sliding_log`, and
 * `<prefix>{<identityKey>}:<class>:<period>` for a calendar window (SPEC §19: `:read:month`,
 * whatever the algorithm: its counter is one hash either way). The braces are a Redis Cluster hash
 * tag: every key of one identity lands in one slot, so one call touches one slot. The `:log`
 * suffix keeps the two algorithms' keys apart, so a reload that switches a class's algorithm never
 * meets a key of the other Redis type (WRONGTYPE). The offset a calendar window is aligned to is
 * not in its key: the counter remembers its period's start, so periods of another offset start
 * from zero.
 */
import type { LimitPolicy } from "./limiter.js";

/** Per-policy key tails, built once per policy object. */
const suffixCache = new WeakMap<LimitPolicy, readonly string[]>();

/**
 * The key tails of a policy's windows, after the identity's hash tag: `:<class>:<window_s>[:log]`,
 * or `:<class>:<period>` for a calendar window.
 * @returns one entry per window, cached per policy object (policies are frozen, built at load)
 */
export function windowSuffixes(policy: LimitPolicy): readonly string[] {
  let s = suffixCache.get(policy);
  if (s === undefined) {
    const log = policy.algorithm === "sliding_log" ? ":log" : "";
    s = policy.windows.map((w) =>
      w.period === undefined ? `:${policy.className}:${w.windowS}${log}` : `:${policy.className}:${w.period}`,
    );
    suffixCache.set(policy, s);
  }
  return s;
}

/**
 * The storage key of one window.
 * @param prefix - store prefix including its separator (`rl:` for Redis, `""` in memory)
 * @param identityKey - identity with its kind, e.g. `sub:alice`
 * @param windowIndex - index in `policy.windows`
 */
export function windowKey(
  prefix: string,
  identityKey: string,
  policy: LimitPolicy,
  windowIndex: number,
): string {
  return `${prefix}{${identityKey}}${windowSuffixes(policy)[windowIndex]!}`;
}
