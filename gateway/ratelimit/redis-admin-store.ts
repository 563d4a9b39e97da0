/**
 * The Redis side of usage operations (SPEC §21), beside the limiter's keys under the same prefix:
 *
 * - `<prefix>:{admin}:overrides`: a hash, storage identity → the override as JSON;
 * - `<prefix>:{admin}:version`: a counter raised by every reset and override change;
 * - `<prefix>:{admin}:changes`: the identities of the latest changes, newest first, capped;
 * - `<prefix>:{admin}:run_id`: the `run_id` of the Redis server that holds them (see {@link HISTORY}).
 *
 * The four share the hash tag `{admin}` (one Cluster slot; no identity key has it, since every
 * identity's tag starts with its kind, `{sub:`), so each script touches one slot. Every replica
 * polls the counter off the request path ({@link RedisAdminStore.poll}, one small `EVALSHA`), and
 * only when it moved reads the changed identities and the overrides: the request path keeps its one
 * round trip. Overrides survive gateway restarts and reloads with Redis; an override past its
 * `expires_at` stops applying on every replica at that second (each checks it per call) and is
 * deleted from the hash by the next change, a timestamp taken from Redis `TIME`.
 */
import { Cluster } from "ioredis";
import type { RedisClient } from "./redis-connection.js";
import type { AdminNews, AdminStore } from "./admin-store.js";
import type { Override } from "./overrides.js";
import { PERIODS } from "../config/calendar-periods.js";
import { topKey } from "./top-callers.js";

/** Changes remembered for replicas that poll late; one further behind forgets everything. */
const KEPT_CHANGES = 1000;

/**
 * The first step of both scripts (KEYS[2] the counter, KEYS[4] the run_id key): whether this Redis
 * still holds the history the replicas read. A server's `run_id` changes with every restart, so
 * when the one recorded is not this server's (a restart, with or without persistence, a restore
 * from an older snapshot, a replica promoted behind its master, a flush), the counter may be back
 * at a number a replica already saw; it is moved to Redis's clock in ms (past every number of the
 * history before, short of a thousand changes a second) and the replicas' next poll re-reads
 * everything. Costs one `INFO server` per script call, off the request path. A user whose ACL
 * refuses `INFO` records `-`: then only a lost key (a flush, a restart without persistence) is seen.
 */
const HISTORY = `
local time = redis.call('TIME')
local info = redis.pcall('INFO', 'server')
local run = type(info) == 'string' and string.match(info, 'run_id:(%w+)') or '-'
if redis.call('GET', KEYS[4]) ~= run then
  local clock = time[1] .. string.format('%03d', math.floor(tonumber(time[2]) / 1000))
  if tonumber(redis.call('GET', KEYS[2]) or '0') < tonumber(clock) then
    redis.call('SET', KEYS[2], clock)
  end
  redis.call('SET', KEYS[4], run)
end
`;

/**
 * KEYS[1] overrides hash, KEYS[2] version counter, KEYS[3] changes list, KEYS[4] run_id.
 * ARGV[1] `set`, `del` or `reset`; ARGV[2] the identity; ARGV[3] the override's JSON (`set`);
 * ARGV[4] changes kept.
 * After {@link HISTORY}: drops expired overrides (Redis TIME), applies the change, raises the
 * counter, records the identity. Returns `{version, previous JSON}` (the second absent when there
 * was none or `reset`).
 */
const CHANGE = `${HISTORY}
local now = tonumber(time[1])
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local ok, o = pcall(cjson.decode, all[i + 1])
  if not ok or (type(o.expires_at) == 'number' and o.expires_at <= now) then
    redis.call('HDEL', KEYS[1], all[i])
  end
end
local before = false
if ARGV[1] ~= 'reset' then
  before = redis.call('HGET', KEYS[1], ARGV[2])
  if ARGV[1] == 'set' then
    redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
  else
    redis.call('HDEL', KEYS[1], ARGV[2])
  end
end
local v = redis.call('INCR', KEYS[2])
redis.call('LPUSH', KEYS[3], ARGV[2])
redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[4]) - 1)
return {v, before}
`;

/**
 * KEYS as {@link CHANGE}. ARGV[1] the version the replica has (-1: none); ARGV[2] changes kept.
 * After {@link HISTORY}: returns `{version}` when unchanged, else `{version, all, identities,
 * overrides HGETALL}` where `all` is 1 when the changes since that version are not all remembered
 * (too many, a counter moved by {@link HISTORY}, or a list shorter than the counter moved).
 */
const POLL = `${HISTORY}
local v = tonumber(redis.call('GET', KEYS[2]) or '0')
local since = tonumber(ARGV[1])
if v == since then return {v} end
local n = v - since
local all = 0
local changes = {}
if since < 0 or n < 0 or n > tonumber(ARGV[2]) or redis.call('LLEN', KEYS[3]) < n then
  all = 1
else
  changes = redis.call('LRANGE', KEYS[3], 0, n - 1)
end
return {v, all, changes, redis.call('HGETALL', KEYS[1])}
`;

interface AdminCommands {
  rlAdminChange(n: number, ...args: (string | number)[]): Promise<[number, string?]>;
  rlAdminPoll(n: number, ...args: (string | number)[]): Promise<[number, number?, string[]?, string[]?]>;
}

/** The Redis {@link AdminStore}. */
export class RedisAdminStore implements AdminStore {
  readonly shared = true;
  private readonly keys: readonly string[];
  private readonly commands: AdminCommands;

  /**
   * @param client - the limiter's client (the scripts are defined on it)
   * @param prefix - the store's key prefix with its separator (`rl:`)
   * @param timeoutMs - bound on each call (ms): `rate_limits.store.redis.command_timeout_ms`
   */
  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    private readonly timeoutMs: number,
  ) {
    client.defineCommand("rlAdminChange", { lua: CHANGE });
    client.defineCommand("rlAdminPoll", { lua: POLL });
    this.commands = client as unknown as AdminCommands;
    this.keys = ["overrides", "version", "changes", "run_id"].map((k) => `${prefix}{admin}:${k}`);
  }

  async setOverride(identity: string, next: Override | null): Promise<Override | null> {
    const op = next === null ? "del" : "set";
    const json = next === null ? "" : JSON.stringify(next);
    const reply = await this.bounded(
      this.commands.rlAdminChange(4, ...this.keys, op, identity, json, KEPT_CHANGES),
    );
    return parseOverride(reply[1] ?? null);
  }

  async deleteKeys(identity: string, keys: readonly string[], classes: readonly string[]): Promise<void> {
    // One DEL per hash tag (one Cluster slot each): the identity's own keys go in one, at once.
    const byTag = new Map<string, string[]>();
    for (const k of keys) {
      const tag = k.slice(0, k.indexOf("}") + 1);
      byTag.set(tag, [...(byTag.get(tag) ?? []), this.prefix + k]);
    }
    await Promise.all([...byTag.values()].map((group) => this.bounded(this.client.del(...group))));
    // Its place in the top-caller sets (one key per class and period, each in its own slot): the
    // limiter's ZADD (GT in a Cluster) would otherwise keep the old count until the period ends.
    const tops = classes.flatMap((c) => PERIODS.map((p) => topKey(this.prefix, c, p)));
    await Promise.all(tops.map((k) => this.bounded(this.client.zrem(k, identity))));
    await this.bounded(this.commands.rlAdminChange(4, ...this.keys, "reset", identity, "", KEPT_CHANGES));
  }

  async poll(version: number): Promise<AdminNews | null> {
    const reply = await this.bounded(this.commands.rlAdminPoll(4, ...this.keys, version, KEPT_CHANGES));
    if (reply.length === 1) return null;
    const [v, all, changes, flat] = reply;
    const overrides: Override[] = [];
    for (let i = 0; i + 1 < (flat ?? []).length; i += 2) {
      const o = parseOverride(flat![i + 1]!);
      if (o !== null) overrides.push(o);
    }
    return { version: Number(v), identities: all === 1 ? null : [...new Set(changes ?? [])], overrides };
  }

  /**
   * `SCAN` of every primary (every Cluster master) for `<prefix>{claim:*}<identity>*`: a walk of the
   * keyspace, for an admin reset only, never on the request path.
   */
  async memberKeys(identity: string): Promise<string[]> {
    const match = `${globEscape(this.prefix)}{claim:*}${globEscape(identity)}*`;
    const nodes = this.client instanceof Cluster ? this.client.nodes("master") : [this.client];
    const found = await Promise.all(
      nodes.map(async (node) => {
        const keys: string[] = [];
        let cursor = "0";
        do {
          const [next, batch] = await this.bounded(node.scan(cursor, "MATCH", match, "COUNT", 1000));
          cursor = next;
          for (const k of batch) keys.push(k.slice(this.prefix.length));
        } while (cursor !== "0");
        return keys;
      }),
    );
    return [...new Set(found.flat())];
  }

  /** A call that does not answer within the command timeout fails (the admin answers 503). */
  private bounded<T>(p: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("limit store timeout")), this.timeoutMs);
    });
    return Promise.race([p, late]).finally(() => clearTimeout(timer));
  }
}

/** `text` matched literally by a Redis glob pattern. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, "\\$&");
}

/** An override as stored, or null for none (or a value this version cannot read). */
function parseOverride(json: string | null): Override | null {
  if (json === null || json === "") return null;
  try {
    const o = JSON.parse(json) as Override;
    return typeof o.identity === "string" && typeof o.classes === "object" ? o : null;
  } catch {
    return null;
  }
}
