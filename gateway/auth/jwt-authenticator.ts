/**
 * JWT access tokens (RFC 9068) validated locally, as an {@link Authenticator} (SPEC §11). It claims
 * JWS-shaped tokens (RFC 7515 §7.1), or every token when no introspection source sits behind it, and
 * caches each verdict by the token's SHA-256 (lru-cache, one validation per token however many
 * callers wait for it):
 *
 * - valid: fresh until `min(exp, now + max_ttl_s)`, so a warm request verifies no signature;
 * - refused: fresh for `negative_ttl_s`; a refusal for an unknown key only while the key set is
 *   unchanged, so a key that appears by a background refresh is used at once;
 * - unavailable (key not held, key set unreachable): never cached.
 *
 * A miss is resolved behind the anonymous-budget guard like an introspection miss (SPEC §3), so a
 * flood of forged JWTs from one IP is stopped by the anonymous limit.
 *
 * Tracing (SPEC §13): a miss makes a network call only when its key must be fetched; that wait is
 * the request's `auth.jwks` span ({@link KeySet.resolve}). Concurrent misses of one token share one
 * validation, traced in the request that started it.
 */
import { LRUCache } from "lru-cache";
import type { Logger } from "pino";
import type { Clock, EpochMs } from "../base/clock.js";
import type { JwtConfig } from "../config/schema.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import type { JwtValidationResult } from "../base/results.js";
import type { RequestTrace } from "../observability/tracing/request-trace.js";
import type { Authenticator } from "./authenticator.js";
import { KeySet } from "./jwks.js";
import { isJwsCompact } from "./jws-shape.js";
import { describeRefusal } from "./jwt-refusal.js";
import { JwtValidator } from "./jwt-validator.js";
import type { TokenLookup } from "./token-cache.js";
import { INACTIVE, type TokenInfo } from "../base/token-info.js";

/** Options of {@link JwtAuthenticator} (SPEC §11 `auth.jwt`). */
export interface JwtAuthenticatorOptions {
  /** `auth.jwt`. */
  config: JwtConfig;
  /** True when no introspection source is configured: every token is this authenticator's. */
  claimsEveryToken: boolean;
  /** Claims kept in `TokenInfo.claims` (the `rate_limits.plan_claim`, SPEC §10). */
  claimNames?: readonly string[];
  clock: Clock;
  metrics: GatewayMetrics;
  logger: Logger;
}

type Entry =
  | { kind: "valid"; info: TokenInfo; freshUntilMs: EpochMs }
  /** `keysVersion`: the key set a refusal for an unknown key was decided on. */
  | { kind: "refused"; freshUntilMs: EpochMs; keysVersion: number | undefined }
  | { kind: "unavailable" };

/** What a miss hands to its validation (lru-cache's fetch `context`). */
interface Miss {
  readonly token: string;
  /** The spans of the request that started the validation. */
  readonly trace: RequestTrace | null;
}

const RESULTS: readonly JwtValidationResult[] = [
  "valid",
  "malformed",
  "algorithm",
  "bad_signature",
  "expired",
  "claims",
  "unknown_key",
  "unavailable",
];

/**
 * Validates JWT access tokens (RFC 9068) of one issuer locally, behind a cache keyed by the token's
 * SHA-256; claims JWS compact serialisations (RFC 7515 §7.1).
 */
export class JwtAuthenticator implements Authenticator {
  /** The issuer's key set (fetched at construction). */
  readonly keys: KeySet;
  readonly #validator: JwtValidator;
  readonly #lru: LRUCache<string, Entry, Miss>;
  readonly #clock: Clock;
  readonly #config: JwtConfig;
  readonly #logger: Logger;
  readonly #claimsEveryToken: boolean;
  readonly #maxTtlMs: number;
  readonly #negativeTtlMs: number;
  readonly #count: Record<"hit" | "miss" | "negative", { inc(): void }>;
  readonly #results: Map<JwtValidationResult, { inc(): void }>;

  constructor(opts: JwtAuthenticatorOptions) {
    const { config, clock, metrics } = opts;
    this.keys = new KeySet({
      issuer: config.issuer,
      jwksUrl: config.jwks_url,
      timeoutMs: config.timeout_ms,
      refreshMs: config.jwks_refresh_s * 1000,
      clock,
      metrics,
      logger: opts.logger,
    });
    this.#validator = new JwtValidator(config, this.keys, clock, opts.claimNames ?? []);
    this.#clock = clock;
    this.#config = config;
    this.#logger = opts.logger;
    this.#claimsEveryToken = opts.claimsEveryToken;
    this.#maxTtlMs = config.cache.max_ttl_s * 1000;
    this.#negativeTtlMs = config.cache.negative_ttl_s * 1000;
    const lookups = metrics.tokenCacheLookups;
    this.#count = {
      hit: lookups.labels({ result: "hit" }),
      miss: lookups.labels({ result: "miss" }),
      negative: lookups.labels({ result: "negative" }),
    };
    this.#results = new Map(RESULTS.map((r) => [r, metrics.jwtValidations.labels({ result: r })]));
    this.#lru = new LRUCache<string, Entry, Miss>({
      max: config.cache.max_entries,
      ignoreFetchAbort: true,
      fetchMethod: (_hash, _old, { context }) => this.#validate(context),
    });
  }

  /**
   * SPEC §11: a JWS compact serialisation is this authenticator's, whether it validates or not. A
   * token it has cached was one, so a warm request does not parse the header again.
   */
  claims(token: string, hash: string): boolean {
    return this.#claimsEveryToken || this.#lru.has(hash) || isJwsCompact(token);
  }

  cached(hash: string): TokenInfo | undefined {
    const e = this.#lru.get(hash);
    if (e === undefined || !this.#fresh(e, this.#clock.nowMs())) return undefined;
    if (e.kind === "valid") {
      this.#count.hit.inc();
      return e.info;
    }
    this.#count.negative.inc();
    return INACTIVE;
  }

  knownActive(hash: string): boolean {
    const e = this.#lru.peek(hash);
    return e?.kind === "valid" && this.#clock.nowMs() < e.info.exp! * 1000;
  }

  /**
   * Validates the token (no network call unless its key must be fetched). Never rejects.
   * @param trace - the request's spans: a key-set fetch it waits for is its `auth.jwks` span
   */
  async resolve(token: string, hash: string, trace: RequestTrace | null): Promise<TokenLookup> {
    const entry = await this.#lru.fetch(hash, { context: { token, trace }, forceRefresh: true });
    this.#count.miss.inc();
    if (entry === undefined || entry.kind === "unavailable") return { status: "unavailable" };
    return entry.kind === "valid" ? { status: "active", info: entry.info } : { status: "inactive" };
  }

  async close(): Promise<void> {
    this.#lru.clear();
    await this.keys.close();
  }

  #fresh(e: Entry, now: EpochMs): boolean {
    if (e.kind === "unavailable" || now >= e.freshUntilMs) return false;
    return e.kind === "valid" || e.keysVersion === undefined || e.keysVersion === this.keys.version;
  }

  /** lru-cache `fetchMethod`: never rejects. */
  async #validate(miss: Miss): Promise<Entry> {
    const verdict = await this.#validator.validate(miss.token, miss.trace);
    this.#results.get(verdict.result)!.inc();
    const now = this.#clock.nowMs();
    if (verdict.result !== "valid" && this.#logger.isLevelEnabled("debug")) {
      const why = describeRefusal(verdict.cause, miss.token, this.#config, this.keys.issuer, now / 1000);
      this.#logger.debug({ auth: "jwt", result: verdict.result, ...why }, `JWT refused: ${why.reason}`);
    }
    switch (verdict.result) {
      case "valid": {
        // Within `leeway_s` past `exp` the token is valid for this call but not cached.
        const freshUntilMs = Math.min(verdict.info.exp! * 1000, now + this.#maxTtlMs);
        return { kind: "valid", info: verdict.info, freshUntilMs };
      }
      case "unavailable":
        return { kind: "unavailable" };
      case "unknown_key":
        return { kind: "refused", freshUntilMs: now + this.#negativeTtlMs, keysVersion: this.keys.version };
      default:
        return { kind: "refused", freshUntilMs: now + this.#negativeTtlMs, keysVersion: undefined };
    }
  }
}
