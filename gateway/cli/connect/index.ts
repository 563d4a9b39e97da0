/**
 * `gateway check --connect` (issue 27 §3): tries, concurrently, what a valid configuration names:
 * Redis, the identity provider, each upstream endpoint and each TLS file.
 */
import type { LoadedConfig } from "../../config/load.js";
import { probeIdentityProvider } from "./idp.js";
import type { ProbeResult } from "./probe.js";
import { hasCalendarWindows } from "../../ratelimit/redis-persistence.js";
import { probeRedis } from "./redis.js";
import { probeTlsFiles } from "./tls-files.js";
import { probeUpstreams } from "./upstream-probe.js";

/** @returns every attempt's result, Redis first, then the identity provider, upstreams, TLS files */
export async function probeAll({ config, baseDir }: LoadedConfig): Promise<ProbeResult[]> {
  const redis = config.rate_limits.store.redis;
  const groups = await Promise.all([
    redis === undefined ? [] : probeRedis(redis, hasCalendarWindows(config.rate_limits)),
    probeIdentityProvider(config.auth),
    probeUpstreams(config, baseDir),
  ]);
  return [...groups.flat(), ...probeTlsFiles(config, baseDir)];
}

/** One printed line: `ok  `, `warn` or `FAIL`, what was tried, what answered (and the warning). */
export function formatProbe(r: ProbeResult): string {
  if (r.ok && r.warning !== undefined) return `warn ${r.what}: ${r.answer}; warning: ${r.warning}`;
  return `${r.ok ? "ok  " : "FAIL"} ${r.what}: ${r.answer}`;
}
