/**
 * `--connect` for `rate_limits.store.redis`: each server the block names is connected to with its
 * credentials and asked what the gateway will ask. Standalone: connect (TLS for `rediss://`), `AUTH`,
 * `SELECT <db>`, `PING`. Cluster: each seed node, `PING` and `CLUSTER INFO`'s state. Sentinel: each
 * sentinel's `SENTINEL get-master-addr-by-name`, then the primary it names as a standalone server.
 * With calendar windows configured, each data server is also asked whether it persists anything
 * (`CONFIG GET save`, `appendonly`): one that does not is a warning naming it (SPEC §19).
 */
import { Redis, type RedisOptions } from "ioredis";
import type { RedisConfig } from "../../config/schema.js";
import { redisPasswords } from "../../ratelimit/redis-connection.js";
import { persistenceOf, VOLATILE_QUOTAS_WARNING } from "../../ratelimit/redis-persistence.js";
import { errorText, maskUrl, PROBE_TIMEOUT_MS, within, type ProbeResult } from "./probe.js";

/**
 * Connection settings of one server from its URL (`redis[s]://[user:password@]host[:port][/db]`).
 * @param password - what `start` sends to this server (`redisPasswords`), whatever the URL says
 */
function optionsOf(
  url: string,
  defaultPort: number,
  password: string | undefined,
): RedisOptions & { db: number } {
  const u = new URL(url);
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  return {
    host: u.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: u.port === "" ? defaultPort : Number(u.port),
    ...(u.username === "" ? {} : { username: decodeURIComponent(u.username) }),
    ...(password === undefined ? {} : { password }),
    ...(u.protocol === "rediss:" ? { tls: {} } : {}),
    db,
  };
}

/** Runs `steps` on a fresh connection (no retries, no SELECT by ioredis: the steps say it). */
async function session(
  options: RedisOptions,
  steps: (client: Redis, done: string[]) => Promise<string | void>,
): Promise<{ ok: boolean; answer: string; warning?: string }> {
  const client = new Redis({
    ...options,
    db: 0,
    lazyConnect: true,
    connectTimeout: PROBE_TIMEOUT_MS,
    commandTimeout: PROBE_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  let lastError: unknown;
  client.on("error", (err) => (lastError = err));
  const done: string[] = [];
  try {
    await within(client.connect(), PROBE_TIMEOUT_MS, `no answer within ${PROBE_TIMEOUT_MS} ms`);
    done.push(options.password === undefined ? "connected" : "connected, AUTH ok");
    const warning = await steps(client, done);
    return { ok: true, answer: done.join(", "), ...(warning ? { warning } : {}) };
  } catch (err) {
    const why = errorText(lastError !== undefined && done.length === 0 ? lastError : err);
    return { ok: false, answer: [...done, `failed: ${why}`].join(", ") };
  } finally {
    client.disconnect();
  }
}

/**
 * With calendar windows: asks whether the server persists anything.
 * @returns the warning when it does not
 */
async function persistence(client: Redis, done: string[], url: string): Promise<string | undefined> {
  const p = await persistenceOf((command, ...args) => client.call(command, ...args));
  if (!p.known) {
    done.push(`persistence unknown (CONFIG GET refused: ${p.why})`);
    return undefined;
  }
  done.push(`CONFIG GET save "${p.save}", appendonly ${p.appendonly}`);
  return p.persists ? undefined : `${VOLATILE_QUOTAS_WARNING} (${maskUrl(url)})`;
}

async function standalone(
  url: string,
  password: string | undefined,
  calendar: boolean,
  defaultPort = 6379,
): Promise<ProbeResult> {
  const options = optionsOf(url, defaultPort, password);
  const r = await session(options, async (client, done) => {
    if (options.db !== 0) {
      await client.select(options.db);
      done.push(`SELECT ${options.db} ok`);
    }
    done.push(`PING answered ${await client.ping()}`);
    return calendar ? persistence(client, done, url) : undefined;
  });
  return { what: `redis ${maskUrl(url)}`, ...r };
}

async function clusterNode(
  url: string,
  password: string | undefined,
  calendar: boolean,
): Promise<ProbeResult> {
  const r = await session(optionsOf(url, 6379, password), async (client, done) => {
    done.push(`PING answered ${await client.ping()}`);
    const info = String(await client.call("CLUSTER", "INFO"));
    const state = /cluster_state:(\w+)/.exec(info)?.[1] ?? "unknown";
    if (state !== "ok") throw new Error(`CLUSTER INFO says cluster_state:${state}`);
    done.push("CLUSTER INFO says cluster_state:ok");
    return calendar ? persistence(client, done, url) : undefined;
  });
  return { what: `redis cluster node ${maskUrl(url)}`, ...r };
}

async function sentinel(
  url: string,
  name: string,
  password: string | undefined,
  sentinelPassword: string | undefined,
  calendar: boolean,
): Promise<ProbeResult[]> {
  let primary: string | undefined;
  const r = await session(optionsOf(url, 26379, sentinelPassword), async (client, done) => {
    const addr = (await client.call("SENTINEL", "get-master-addr-by-name", name)) as string[] | null;
    if (addr === null) throw new Error(`SENTINEL get-master-addr-by-name ${name}: unknown name`);
    primary = `redis://${addr[0]}:${addr[1]}`;
    done.push(`SENTINEL get-master-addr-by-name ${name} answered ${addr[0]}:${addr[1]}`);
  });
  const results: ProbeResult[] = [{ what: `redis sentinel ${maskUrl(url)}`, ...r }];
  if (primary !== undefined) results.push(await standalone(primary, password, calendar));
  return results;
}

/**
 * @param calendar - calendar windows are configured: each data server's persistence is read too
 * @returns one result per server tried
 */
export async function probeRedis(cfg: RedisConfig, calendar = false): Promise<ProbeResult[]> {
  // The passwords `start` sends (one rule, `redisPasswords`), so a probe that passes means start can.
  const { data, sentinel: sentinelPassword } = redisPasswords(cfg);
  if (cfg.cluster !== undefined) {
    return Promise.all(cfg.cluster.map((u) => clusterNode(u, data, calendar)));
  }
  if (cfg.sentinels !== undefined) {
    const name = cfg.name ?? "mymaster";
    const each = cfg.sentinels.map((u) => sentinel(u, name, data, sentinelPassword, calendar));
    return (await Promise.all(each)).flat();
  }
  return [await standalone(cfg.url ?? "redis://127.0.0.1:6379", data, calendar)];
}
