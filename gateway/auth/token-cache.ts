/**
 * The token cache in front of an introspection source (SPEC §5), on lru-cache 11.
 *
 * Keys are the SHA-256 of the token, never the token. Freshness is computed from the injected
 * {@link Clock} and stored in each entry (lru-cache's own TTL runs on `performance.now()`, which
 * tests cannot move), so lru-cache is used for what it is good at: a bounded LRU and, through
 * `fetchMethod`, one in-flight introspection per token shared by every concurrent caller.
 */
import { LRUCache } from "lru-cache";
import type { Logger } from "pino";
import type { Clock, EpochMs } from "../base/clock.js";
import type { TokenCacheConfig } from "../config/schema.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import { hashToken, INACTIVE, type TokenInfo } from "../base/token-info.js";
import { IntrospectionUnavailableError, type IntrospectionSource } from "./introspection-source.js";

/** While serving stale, the source is asked again at most this often per token (ms). */
const STALE_RETRY_MS = 1_000;

/** Result of {@link TokenCache.fetch}: what the pipeline turns into 200/401/503 (SPEC §2). */
export type TokenLookup =
  | { status: "active"; info: TokenInfo }
  | { status: "inactive" }
  | { status: "unavailable" };

/** Collaborators of {@link TokenCache}. */
export interface TokenCacheOptions {
  /** The introspection source; {@link TokenCache.close} closes it. */
  source: IntrospectionSource;
  /** `auth.*.cache`: max_entries, max_ttl_s, negative_ttl_s, stale_if_error_s. */
  config: TokenCacheConfig;
  clock: Clock;
  metrics: GatewayMetrics;
  logger: Logger;
}

/** A cached answer. `freshUntilMs` ends the time it is served without asking the source. */
type Entry =
  | { kind: "active"; info: TokenInfo; freshUntilMs: EpochMs; usableUntilMs: EpochMs; retryAtMs: EpochMs }
  | { kind: "inactive"; freshUntilMs: EpochMs }
  | { kind: "unavailable"; freshUntilMs: EpochMs };

/**
 * Caches introspection answers by token hash.
 *
 * - positive entry: fresh until `min(exp, now + max_ttl_s)`; an active answer already past `exp`
 *   is cached as inactive;
 * - negative entry: fresh for `negative_ttl_s` (0: kept only as a tombstone, never served);
 * - source failure: a positive entry not past `exp` whose freshness ended at most
 *   `stale_if_error_s` ago is served (metric `stale`), and the source is retried for that token
 *   at most once per second; otherwise `unavailable`.
 */
export class TokenCache {
  readonly #lru: LRUCache<string, Entry, string>;
  readonly #source: IntrospectionSource;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #maxTtlMs: number;
  readonly #negativeTtlMs: number;
  readonly #staleMs: number;
  readonly #count: Record<"hit" | "miss" | "negative" | "stale", { inc(): void }>;
  /** Clock time the current source outage began (first failed call), or undefined while it answers. */
  #failingSinceMs: EpochMs | undefined;

  constructor(opts: TokenCacheOptions) {
    this.#source = opts.source;
    this.#clock = opts.clock;
    this.#logger = opts.logger;
    this.#maxTtlMs = opts.config.max_ttl_s * 1000;
    this.#negativeTtlMs = opts.config.negative_ttl_s * 1000;
    this.#staleMs = opts.config.stale_if_error_s * 1000;
    const lookups = opts.metrics.tokenCacheLookups;
    this.#count = {
      hit: lookups.labels({ result: "hit" }),
      miss: lookups.labels({ result: "miss" }),
      negative: lookups.labels({ result: "negative" }),
      stale: lookups.labels({ result: "stale" }),
    };
    this.#lru = new LRUCache<string, Entry, string>({
      max: opts.config.max_entries,
      // An in-flight fetch evicted by newer keys still answers its waiting callers.
      ignoreFetchAbort: true,
      fetchMethod: (_hash, old, { context }) => this.#introspect(context, old),
    });
  }

  /** SHA-256 hex of the token; the cache key (never the token itself). See {@link hashToken}. */
  static readonly hashToken = hashToken;

  /**
   * Warm path: a fresh cached answer, counted as `hit` (active) or `negative` (inactive).
   * @param hash - {@link TokenCache.hashToken} of the token
   * @returns the answer, or undefined when {@link TokenCache.fetch} must be called
   */
  get(hash: string): TokenInfo | undefined {
    const e = this.#lru.get(hash);
    if (e === undefined || this.#clock.nowMs() >= e.freshUntilMs) return undefined;
    if (e.kind === "active") {
      this.#count.hit.inc();
      return e.info;
    }
    this.#count.negative.inc();
    return INACTIVE;
  }

  /** Non-counting check: true when {@link get} would answer without asking the source. */
  has(hash: string): boolean {
    const e = this.#lru.peek(hash);
    return e !== undefined && this.#clock.nowMs() < e.freshUntilMs;
  }

  /**
   * True when the token was active when last asked and is not past `exp`: a token whose cache entry
   * merely went stale, not a guess. The anonymous guard (SPEC §3) lets it through to re-validation,
   * so a valid token on an IP whose anonymous budget is spent (a shared NAT) keeps working.
   */
  knownActive(hash: string): boolean {
    const e = this.#lru.peek(hash);
    if (e?.kind !== "active") return false;
    const exp = e.info.exp;
    return exp === undefined || this.#clock.nowMs() < exp * 1000;
  }

  /**
   * Miss path: asks the source, one call per token however many callers wait for it; counted as
   * `miss`, or `stale` when a stale positive entry is served because the source failed.
   * @param token - the bearer token, passed to the source only
   * @param hash - {@link TokenCache.hashToken} of `token`
   * @returns never rejects; source failures become `unavailable` (SPEC §2: 503)
   */
  async fetch(token: string, hash: string): Promise<TokenLookup> {
    const cached = this.#lru.peek(hash);
    const now = this.#clock.nowMs();
    if (cached !== undefined && now < cached.freshUntilMs) return this.#answer(cached, now, "hit");
    if (cached?.kind === "active" && now < cached.retryAtMs && now < cached.usableUntilMs) {
      return this.#answer(cached, now, "stale");
    }
    const entry = await this.#lru.fetch(hash, { context: token, forceRefresh: true });
    if (entry === undefined) return { status: "unavailable" };
    const then = this.#clock.nowMs();
    return this.#answer(
      entry,
      then,
      entry.kind === "active" && then >= entry.freshUntilMs ? "stale" : "miss",
    );
  }

  /** Drops every entry and closes the source. */
  async close(): Promise<void> {
    this.#lru.clear();
    await this.#source.close?.();
  }

  #answer(e: Entry, now: EpochMs, counted: "hit" | "miss" | "stale"): TokenLookup {
    if (e.kind === "active") {
      if (now >= e.usableUntilMs) {
        this.#count.miss.inc();
        return { status: "unavailable" };
      }
      this.#count[counted].inc();
      return { status: "active", info: e.info };
    }
    this.#count[counted === "hit" ? "negative" : "miss"].inc();
    return e.kind === "inactive" ? { status: "inactive" } : { status: "unavailable" };
  }

  /** lru-cache `fetchMethod`: never rejects, so every waiting caller gets an entry. */
  async #introspect(token: string, old: Entry | undefined): Promise<Entry> {
    let info: TokenInfo;
    try {
      info = await this.#source.introspect(token);
    } catch (err) {
      return this.#failed(err, old);
    }
    const now = this.#clock.nowMs();
    if (this.#failingSinceMs !== undefined) {
      // One line per outage episode, with its duration, when it ends.
      this.#logger.info({ outageMs: now - this.#failingSinceMs }, "introspection source answers again");
      this.#failingSinceMs = undefined;
    }
    const expMs = info.exp === undefined ? Infinity : info.exp * 1000;
    if (!info.active || expMs <= now) {
      // Why a token is refused, never the token; a refusal is cached, so one line per
      // token per negative_ttl_s.
      if (!info.active)
        this.#logger.debug({ auth: this.#source.kind, reason: "inactive" }, "token refused: active is false");
      else
        this.#logger.debug(
          { auth: this.#source.kind, reason: "exp", exp: info.exp, nowS: now / 1000 },
          "token refused: exp is past",
        );
      return { kind: "inactive", freshUntilMs: now + this.#negativeTtlMs };
    }
    const freshUntilMs = Math.min(expMs, now + this.#maxTtlMs);
    return {
      kind: "active",
      info,
      freshUntilMs,
      usableUntilMs: Math.min(expMs, freshUntilMs + this.#staleMs),
      retryAtMs: freshUntilMs,
    };
  }

  #failed(err: unknown, old: Entry | undefined): Entry {
    const now = this.#clock.nowMs();
    const why = err instanceof IntrospectionUnavailableError ? err.reason : "error";
    this.#logger.debug(
      { auth: this.#source.kind, reason: why, err: err instanceof Error ? err.message : String(err) },
      "token not checked: the source failed",
    );
    if (this.#failingSinceMs === undefined) {
      this.#failingSinceMs = now;
      const reason = err instanceof IntrospectionUnavailableError ? err.reason : "error";
      this.#logger.warn(
        { reason, err: err instanceof Error ? err.message : String(err) },
        "introspection source unavailable; serving cached tokens for up to stale_if_error_s",
      );
    }
    if (old?.kind === "active" && now < old.usableUntilMs) {
      return { ...old, retryAtMs: Math.min(now + STALE_RETRY_MS, old.usableUntilMs) };
    }
    return { kind: "unavailable", freshUntilMs: now };
  }
}
