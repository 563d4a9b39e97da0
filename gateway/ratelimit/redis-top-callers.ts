/**
 * The Redis side of top callers (SPEC §21, `top-callers.ts`): reading a set, and the Cluster
 * update the script cannot make (its keys must share the identity's slot).
 */
import type { Cluster } from "ioredis";
import type { RedisClient } from "./redis-connection.js";
import { periodBounds } from "./calendar.js";
import type { Decision, LimitPolicy } from "./limiter.js";
import { topEntries, topKey, type TopEntry } from "./top-callers.js";

/** `ZREVRANGE key 0 n-1 WITHSCORES`: heaviest first. */
export async function readTop(client: RedisClient, key: string, n: number): Promise<TopEntry[]> {
  return topEntries(await client.zrevrange(key, 0, n - 1, "WITHSCORES"));
}

/**
 * Redis Cluster: after a counted call, `ZADD GT` of the identity's count in each of its calendar
 * windows (`Decision.calendarCounts`, the script's exact count after the call), and the set's
 * expiry at the period's end when the member is new; sent without waiting, errors ignored. `GT`
 * keeps the highest count whatever order replicas' commands arrive in, so the set never goes back
 * to an older count; a lost command is repaired by the identity's next call.
 */
export function clusterTopUpdate(
  client: Cluster,
  prefix: string,
  identityKey: string,
  policy: LimitPolicy,
  d: Decision,
): void {
  const counts = d.calendarCounts;
  if (counts === undefined) return;
  for (let j = 0; j + 1 < counts.length; j += 2) {
    // The identity's own windows come first in every call (callIndexes), at their own index.
    const w = policy.windows[counts[j]!];
    if (w === undefined || w.period === undefined) continue;
    const key = topKey(prefix, policy.className, w.period);
    const endMs = periodBounds(d.nowMs, w.period, w.offsetMs, { startMs: 0, endMs: 0 }).endMs;
    client
      .zadd(key, "GT", counts[j + 1]!, identityKey)
      .then((added) => (Number(added) === 1 ? client.pexpireat(key, endMs) : 0))
      .catch(() => undefined);
  }
}
