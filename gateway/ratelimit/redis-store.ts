/**
 * Redis store (SPEC §4): one `EVALSHA` per call of a Lua script covering every window of the class
 * (`lua/sliding_window.lua`, `lua/sliding_log.lua`), so replicas sharing Redis enforce one limit
 * together. Time is Redis `TIME`, keys carry a hash tag per identity (one Cluster slot per call),
 * and every failure — connection, timeout, script error — rejects with {@link LimitStoreError}
 * naming what failed (`store-failure.ts`). The command timeout is the store's own, measured from
 * each command's write to its reply (`reply-watch.ts`), so a busy event loop is never read as a
 * slow Redis.
 * Each counting call of a traced request is its `ratelimit.redis` span (SPEC §13), so a call
 * answered without Redis (the rejection cache, the failover's local fallback) records none.
 */
import { randomBytes } from "node:crypto";
import { ATTR_DB_SYSTEM_NAME } from "@opentelemetry/semantic-conventions";
import type { Logger } from "pino";
import type { RedisConfig } from "../config/schema.js";
import {
  childSpan,
  traced,
  type ChildSpanSpec,
  type RequestTrace,
} from "../observability/tracing/request-trace.js";
import { type BudgetKeys, type CountMode, type Decision, type Limiter, type LimitPolicy } from "./limiter.js";
import { Cluster, Command } from "ioredis";
import { connectTimeoutMs, openRedis, type RedisClient } from "./redis-connection.js";
import { RedisLink } from "./redis-link.js";
import { ReplyWatch } from "./reply-watch.js";
import { TurnBatch } from "./turn-batch.js";
import { levelStatuses } from "./budgets.js";
import {
  crossingsOf,
  declareScript,
  luaSource,
  scriptPlan,
  toDecision,
  type DeclaredScript,
  type ScriptName,
  type ScriptPlan,
} from "./lua-scripts.js";
import { clusterTopUpdate, readTop } from "./redis-top-callers.js";
import { topKey, type TopCallersReader, type TopEntry } from "./top-callers.js";
import type { Period } from "../config/calendar-periods.js";
import { callIndexes, callKey, windowKey } from "./storage-keys.js";
import { callWindowArgs, scriptArgs } from "./script-call.js";

/** The span of a counting call (SPEC §13; `db.system.name`, OpenTelemetry database conventions). */
const REDIS_SPAN: ChildSpanSpec = Object.freeze({
  name: "ratelimit.redis",
  attributes: Object.freeze({ [ATTR_DB_SYSTEM_NAME]: "redis" }),
});

/** The limiter's replies are integers: no conversion of bulk strings needed. */
const REPLY_OPTIONS = Object.freeze({ replyEncoding: "utf8" as const });

/** Redis's answer to an `EVALSHA` of a script it does not hold (a restart, `SCRIPT FLUSH`). */
const isNoScript = (err: unknown): boolean => err instanceof Error && err.message.startsWith("NOSCRIPT");

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /** The validated `rate_limits.store.redis` block. */
  redis: RedisConfig;
  /** Connection errors are logged here at `debug`; outages are reported by the failover wrapper. */
  logger?: Logger;
  /**
   * The source of each limiter script (tests replace Redis `TIME` with a clock of their own).
   * @default {@link luaSource}
   */
  scriptSource?: (name: ScriptName) => string;
}

/** The Redis {@link Limiter}. */
export class RedisStore implements Limiter, TopCallersReader {
  /** The ioredis client (exposed for tests and diagnostics). */
  readonly client: RedisClient;
  /** The limiter scripts, declared once: each call is one `EVALSHA` of its SHA-1. */
  private readonly scripts: Readonly<Record<ScriptName, DeclaredScript>>;
  private readonly prefix: string;
  private readonly plans = new WeakMap<LimitPolicy, ScriptPlan>();
  /** Random per-store tag + counter: sliding_log members unique across calls and gateways. */
  private readonly nonceTag = randomBytes(6).toString("base64url");
  private seq = 0;
  /** Each call's reply deadline, from its write (SPEC §4: the timeout measures Redis). */
  private readonly watch: ReplyWatch;
  private readonly link: RedisLink;
  /** The connection corked for this event-loop turn's calls (see `turn-batch.ts`). */
  private readonly batch: TurnBatch;

  constructor({ redis, logger, scriptSource = luaSource }: RedisStoreOptions) {
    this.prefix = `${redis.key_prefix}:`;
    this.client = openRedis(redis);
    this.watch = new ReplyWatch(redis.command_timeout_ms);
    this.batch = new TurnBatch(this.client, this.watch);
    this.link = new RedisLink(this.client, redis.command_timeout_ms, connectTimeoutMs(redis), logger);
    this.scripts = {
      sliding_window: declareScript(scriptSource("sliding_window")),
      sliding_log: declareScript(scriptSource("sliding_log")),
    };
  }

  /**
   * @param trace - the request's spans: the call is its `ratelimit.redis` child span when recorded
   *   (an error when it fails); nothing is allocated without one
   * @throws LimitStoreError (as a rejection) naming what failed: no reply `command_timeout_ms`
   *   after the write, or the connection's own error (refused, DNS, TLS, authentication, database)
   */
  consume(
    key: string,
    policy: LimitPolicy,
    trace: RequestTrace | null = null,
    budgets: BudgetKeys | null = null,
  ): Promise<Decision> {
    return traced(childSpan(trace, REDIS_SPAN), this.run(key, policy, "count", budgets, 0));
  }

  /**
   * @param trace - as for {@link consume}
   * @throws LimitStoreError (as a rejection) as for {@link consume}
   */
  peek(
    key: string,
    policy: LimitPolicy,
    trace: RequestTrace | null = null,
    budgets: BudgetKeys | null = null,
  ): Promise<Decision> {
    // With budgets, the reply carries every window's state: the status of each level.
    const every = budgets === null ? 0 : 1;
    return traced(childSpan(trace, REDIS_SPAN), this.run(key, policy, "peek", budgets, every));
  }

  /**
   * The charge of an answer (SPEC §22): one EVALSHA adding `units` to every window of the call.
   * @throws LimitStoreError (as a rejection) as for {@link consume}
   */
  charge(
    key: string,
    policy: LimitPolicy,
    units: number,
    budgets: BudgetKeys | null = null,
  ): Promise<Decision> {
    return this.run(key, policy, "charge", budgets, units);
  }

  /**
   * A `PING` bounded like a call (the failover's idle check).
   * @throws LimitStoreError (as a rejection) as for {@link consume}
   */
  async ping(): Promise<void> {
    await this.link.usable();
    this.batch.join();
    try {
      await this.watch.track(this.client.ping());
    } catch (err) {
      throw this.link.failure(err);
    }
  }

  /**
   * Settles once the first connection attempt has an outcome (bounded by the connect timeout).
   * @throws LimitStoreError (as a rejection) when the configuration itself is refused (`SELECT` of
   *   the URL's database index): a start-up error, never silently database 0
   */
  started(): Promise<void> {
    return this.link.started;
  }

  /**
   * The class's top callers of the current period (SPEC §21): one `ZREVRANGE`.
   * @throws LimitStoreError (as a rejection) as for {@link consume}
   */
  async top(className: string, period: Period, n: number): Promise<TopEntry[]> {
    await this.link.usable();
    try {
      return await this.watch.track(readTop(this.client, topKey(this.prefix, className, period), n));
    } catch (err) {
      throw this.link.failure(err);
    }
  }

  /** Drops the connection at once; calls in flight reject. */
  close(): Promise<void> {
    this.watch.close();
    this.client.disconnect();
    return Promise.resolve();
  }

  /**
   * Redis key of one window ({@link windowKey}): `<key_prefix>:{<identityKey>}:<class>:<window_s>`,
   * plus `:log` for sliding_log. The hash tag puts every key of an identity in one Cluster slot.
   * @param windowIndex - a flat index (own windows, then budgets': `flatWindows`)
   * @param budgets - the call's budgets (SPEC §22): then the key is {@link callKey}'s
   */
  keyOf(
    identityKey: string,
    policy: LimitPolicy,
    windowIndex: number,
    budgets: BudgetKeys | null = null,
  ): string {
    return budgets === null
      ? windowKey(this.prefix, identityKey, policy, windowIndex)
      : callKey(this.prefix, identityKey, policy, budgets, windowIndex);
  }

  private plan(policy: LimitPolicy): ScriptPlan {
    let plan = this.plans.get(policy);
    if (plan === undefined) {
      // SPEC §21: in Cluster the top-caller sets are not the script's (another slot).
      plan = scriptPlan(policy, this.prefix, !(this.client instanceof Cluster));
      this.plans.set(policy, plan);
    }
    return plan;
  }

  private async run(
    key: string,
    policy: LimitPolicy,
    mode: CountMode,
    budgets: BudgetKeys | null,
    units: number,
  ): Promise<Decision> {
    const plan = this.plan(policy);
    // A call that belongs to a budget (SPEC §22): its flat windows, tagged by the first budget.
    const indexes = budgets === null ? null : callIndexes(policy, budgets);
    const nonce = plan.log && mode !== "peek" ? this.nonceTag + (this.seq++).toString(36) : "";
    const script = this.scripts[plan.script];
    const args = scriptArgs(plan, script.sha, this.prefix, key, policy, mode, budgets, indexes, units, nonce);
    const numKeys = args[1] as number;
    // No offline queue: a connection that failed fails the call at once, one being set up is
    // waited for, never past the command timeout.
    if (this.client.status !== "ready") await this.link.usable();
    // The Redis wait is this function's own await of the command (no promise of ours around it).
    const command = this.write("evalsha", args);
    const waiting = this.watch.begin(command.reject);
    let reply: unknown;
    try {
      reply = await command.promise;
      this.watch.end(waiting);
    } catch (err) {
      this.watch.end(waiting);
      if (!isNoScript(err)) throw this.link.failure(err);
      // Redis lost its script cache (a restart, SCRIPT FLUSH): EVAL loads it again, once.
      args[0] = script.lua;
      reply = await this.evalAgain(args);
    }
    const d = toDecision(reply, mode !== "peek" ? -1 : units === 1 ? 6 + 2 * numKeys : 6);
    if (indexes !== null) d.windowIndex = indexes[d.windowIndex]!;
    if (mode !== "peek") {
      if (policy.thresholds !== undefined) {
        const crossings = crossingsOf(d, reply as number[], policy.thresholds, indexes);
        if (crossings !== undefined) d.crossings = crossings;
      }
      if (policy.topCallers === true && this.client instanceof Cluster && (d.allowed || mode === "charge"))
        clusterTopUpdate(this.client, this.prefix, key, policy, d);
    }
    if (indexes !== null && budgets !== null && mode === "peek") {
      const r = reply as number[];
      const windowArgs = callWindowArgs(plan, indexes);
      const limits = indexes.map((_, i) => Number(windowArgs[2 * i]));
      const rems = indexes.map((_, i) => r[6 + 2 * i]!);
      const resets = indexes.map((_, i) => r[7 + 2 * i]!);
      d.levels = levelStatuses(policy, budgets, indexes, limits, rems, resets);
    }
    return d;
  }

  /**
   * One command of the limiter, written with this turn's batch (its reply is the caller's to bound
   * with the watch). A `Command` sent directly: ioredis's `defineCommand` wrapper costs a copy of
   * the arguments, a promise and two closures per call (`built/Script.js`), and it sends `EVAL`
   * first on each connection; here the first call after Redis lost the script meets `NOSCRIPT`
   * and is sent again as `EVAL` ({@link evalAgain}).
   */
  private write(name: "evalsha" | "eval", args: (string | number)[]): Command {
    const command = new Command(name, args, REPLY_OPTIONS);
    this.batch.join();
    void this.client.sendCommand(command);
    return command;
  }

  /**
   * The call again as `EVAL` (`args[0]` the script's source), which loads the script.
   * @throws LimitStoreError as {@link consume}
   */
  private async evalAgain(args: (string | number)[]): Promise<unknown> {
    const command = this.write("eval", args);
    const waiting = this.watch.begin(command.reject);
    try {
      return (await command.promise) as unknown;
    } catch (err) {
      throw this.link.failure(err);
    } finally {
      this.watch.end(waiting);
    }
  }
}
