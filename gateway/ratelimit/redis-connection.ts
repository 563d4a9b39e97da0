/**
 * Opens the ioredis client a `rate_limits.store.redis` block asks for (SPEC §7): a standalone URL,
 * Sentinel (`sentinels` + `name`) or Cluster (`cluster`). Every deployment gets the same bounded hot
 * path: no offline queue (a call made while disconnected fails at once instead of piling up), few
 * retries per request, and reconnection with capped exponential backoff. The command timeout is not
 * ioredis's: the store keeps it (`reply-watch.ts`).
 * Options follow ioredis 5 (`RedisOptions`, `ClusterOptions`, `SentinelConnectionOptions`).
 */
import { Redis, Cluster, type ClusterOptions, type RedisOptions } from "ioredis";
import type { RedisConfig } from "../config/schema.js";

/** The client a store talks to: a single connection (standalone or Sentinel) or a cluster. */
export type RedisClient = Redis | Cluster;

/** Longest pause between reconnection attempts (ms). */
const MAX_BACKOFF_MS = 1000;

/**
 * Reconnection delay: 50 ms doubling per attempt, capped at {@link MAX_BACKOFF_MS}.
 * @param attempt - 1 for the first retry
 * @returns the delay (ms); never null, so the client keeps trying for as long as it lives
 */
export function backoffMs(attempt: number): number {
  return Math.min(50 * 2 ** Math.min(attempt, 10), MAX_BACKOFF_MS);
}

/**
 * Bound on establishing a connection: ten command timeouts, at least 1 s.
 * @returns milliseconds
 */
export function connectTimeoutMs(cfg: RedisConfig): number {
  return Math.max(1000, cfg.command_timeout_ms * 10);
}

/** `redis://[user:password@]host[:port]` → host, port and optional credentials. */
function parseAddress(url: string, defaultPort: number): { host: string; port: number; password?: string } {
  const u = new URL(url);
  const host = u.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = u.port === "" ? defaultPort : Number(u.port);
  return u.password === "" ? { host, port } : { host, port, password: decodeURIComponent(u.password) };
}

/**
 * The passwords the gateway sends, by one rule for `start` and `check --connect`: a standalone
 * server's is its URL's, else `password`; a Cluster's nodes' is `password`, else the first seed
 * URL's that has one, for every node; a Sentinel deployment's data servers' is `password`; the
 * sentinels' is the first sentinel URL's that has one, for every sentinel.
 * @param cfg - the validated `rate_limits.store.redis` block
 */
export function redisPasswords(cfg: RedisConfig): { data?: string; sentinel?: string } {
  const first = (urls: readonly string[], port: number) =>
    urls.map((u) => parseAddress(u, port)).find((n) => n.password !== undefined)?.password;
  const data =
    cfg.cluster !== undefined
      ? (cfg.password ?? first(cfg.cluster, 6379))
      : cfg.sentinels !== undefined
        ? cfg.password
        : (first([cfg.url ?? "redis://127.0.0.1:6379"], 6379) ?? cfg.password);
  const sentinel = cfg.sentinels === undefined ? undefined : first(cfg.sentinels, 26379);
  return { ...(data === undefined ? {} : { data }), ...(sentinel === undefined ? {} : { sentinel }) };
}

/**
 * Creates (and starts connecting) the client for `cfg`.
 * @param cfg - the validated `rate_limits.store.redis` block
 * @returns an ioredis `Redis` (standalone, Sentinel) or `Cluster`; the caller must attach an
 *   `error` listener and eventually `disconnect()` it
 */
export function openRedis(cfg: RedisConfig): RedisClient {
  const common: RedisOptions = {
    // No `commandTimeout`: ioredis's fires on a timer whether or not the reply already waits in the
    // socket, so a busy event loop turned answered calls into timeouts. The store bounds each call
    // itself, from the command's write to its reply (`reply-watch.ts`, SPEC §4).
    // Connecting is slower than a command but must stay bounded too.
    connectTimeout: connectTimeoutMs(cfg),
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    // No auto-pipelining: the gateway makes one call per request, each from its own socket event,
    // so batches are small, and every caller waits for its whole batch (redis/ioredis#1608). Under
    // 16-64 concurrent clients it turned each request's Redis state into promoted garbage: scavenges
    // of 6-28 ms instead of 1-3 ms and 5x the GC time (README "Performance"); also
    // redis/ioredis#1239 (30 % slower with one command per loop turn).
    enableAutoPipelining: false,
    retryStrategy: backoffMs,
    // A demoted primary answers writes with READONLY: reconnect (Sentinel then resolves the new
    // primary); the failed call itself is answered by the failover wrapper.
    reconnectOnError: (err) => err.message.startsWith("READONLY"),
  };
  const passwords = redisPasswords(cfg);
  if (passwords.data !== undefined) common.password = passwords.data;

  if (cfg.cluster !== undefined) {
    const nodes = cfg.cluster.map((u) => parseAddress(u, 6379));
    const password = passwords.data;
    const { retryStrategy: _r, enableOfflineQueue: _q, ...nodeOptions } = common;
    const options: ClusterOptions = {
      enableOfflineQueue: false,
      // No auto-pipelining on Cluster either (its default): ioredis also cannot slot a script call
      // whose key count is an argument ("All keys in the pipeline should belong to the same slots
      // allocation group").
      clusterRetryStrategy: backoffMs,
      slotsRefreshTimeout: connectTimeoutMs(cfg),
      redisOptions: password === undefined ? nodeOptions : { ...nodeOptions, password },
    };
    return new Cluster(
      nodes.map(({ host, port }) => ({ host, port })),
      options,
    );
  }
  if (cfg.sentinels !== undefined) {
    const sentinels = cfg.sentinels.map((u) => parseAddress(u, 26379));
    const sentinelPassword = passwords.sentinel;
    return new Redis({
      ...common,
      sentinels: sentinels.map(({ host, port }) => ({ host, port })),
      name: cfg.name,
      ...(sentinelPassword === undefined ? {} : { sentinelPassword }),
      sentinelRetryStrategy: backoffMs,
      sentinelCommandTimeout: connectTimeoutMs(cfg),
      // Subscribe to +switch-master so a failover is followed without waiting for an error.
      failoverDetector: true,
    });
  }
  return new Redis(cfg.url ?? "redis://127.0.0.1:6379", common);
}
