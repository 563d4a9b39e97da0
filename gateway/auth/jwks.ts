/**
 * The issuer's signing keys for local JWT validation (SPEC §11, RFC 7517 §5, RFC 8725 §3.1), held
 * as a jose local key set and fetched with the exact policy SPEC §11 asks for, which jose's own
 * `createRemoteJWKSet` does not have (its cooldown counts from the fetch at start, and a failed
 * refresh of a stale set fails every verification):
 *
 * - fetched at start; a failure is logged, not fatal;
 * - refreshed in the background every `jwks_refresh_s` (at most 30 s after a failed fetch);
 * - a `kid` the set does not hold triggers one refetch, at most once per 30 s counted from the last
 *   such refetch on the injected clock (the start and background fetches do not count); concurrent
 *   ones share one fetch, and waiters of any fetch in flight look again when it ends;
 * - while the endpoint fails, the keys already held keep working; a key that is not held and cannot
 *   be fetched is {@link KeySetUnavailableError} (503), one the endpoint does not list is jose's
 *   `JWKSNoMatchingKey` (401).
 *
 * Tracing (SPEC §13): a request that waits for a fetch — the refetch its unknown `kid` starts, or a
 * fetch already in flight (the one at start, a background refresh, another request's refetch) — has
 * an `auth.jwks` child span around its wait, ended when the fetch settles and an error when it
 * fails. So concurrent waiters of one fetch each record their own span, and one request may record
 * two (it waited for a fetch in flight, then its `kid` was still unknown and it refetched). A
 * request whose key is held records none; fetches no request waits for (at start, background
 * refreshes) belong to no trace and record none.
 */
import { createLocalJWKSet, errors, type CryptoKey, type FlattenedJWSInput, type JSONWebKeySet } from "jose";
import type { JWSHeaderParameters, LocalJWKSet } from "jose";
import type { Logger } from "pino";
import type { Clock, EpochMs } from "../base/clock.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import {
  childSpan,
  endWithError,
  httpCallSpan,
  type ChildSpanSpec,
  type RequestTrace,
} from "../observability/tracing/request-trace.js";
import { IssuerDocuments, KeySetFetchError } from "./jwks-http.js";
import type { Milliseconds } from "../base/clock.js";

/** An unknown `kid` refetches the key set at most this often (SPEC §11). */
export const UNKNOWN_KID_REFETCH_MS: Milliseconds = 30_000;
/** After a failed fetch the background refresh tries again within this time. */
const RETRY_AFTER_FAILURE_MS: Milliseconds = 30_000;

/**
 * The key a JWS names (RFC 7515 §4.1.4 `kid`) is not held and the key set cannot be fetched (SPEC
 * §11: 503, never 401).
 */
export class KeySetUnavailableError extends Error {
  constructor() {
    super("signing key not held and the key set cannot be fetched");
    this.name = "KeySetUnavailableError";
  }
}

/** Options of {@link KeySet}, from `auth.jwt`. */
export interface KeySetOptions {
  /** `auth.jwt.issuer`: its discovery document names the JWKS when `jwksUrl` is absent. */
  issuer: string;
  /** `auth.jwt.jwks_url`. */
  jwksUrl: string | undefined;
  /** Bound on one discovery or JWKS fetch (ms). */
  timeoutMs: Milliseconds;
  /** Background refresh period (ms). */
  refreshMs: Milliseconds;
  clock: Clock;
  metrics: GatewayMetrics;
  logger: Logger;
}

/** The JWK set (RFC 7517 §5) of one issuer, for verifying its JWT access tokens (RFC 9068 §4). */
export class KeySet {
  readonly #docs: IssuerDocuments;
  readonly #issuer: string;
  /** The issuer tokens must name: the discovery document's spelling once it has answered. */
  #acceptedIssuer: string;
  readonly #configuredUri: string | undefined;
  readonly #refreshMs: Milliseconds;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #fetched: Record<"success" | "error", { inc(): void }>;
  #jwksUri: string | undefined;
  #local: LocalJWKSet | undefined;
  /** The held set as JSON text, to tell a changed set from a refreshed one. */
  #text = "";
  #version = 0;
  #healthy = false;
  #lastUnknownKidRefetchMs: EpochMs | undefined;
  /** The fetch in flight: resolves to what it failed with, or null. */
  #inflight: Promise<Error | null> | undefined;
  /**
   * `auth.jwks` with `server.address`/`server.port` of the JWKS URL, or of the issuer while that URL
   * is yet to be discovered (the fetch then begins with the discovery document).
   */
  #span: ChildSpanSpec;
  #failingSinceMs: EpochMs | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /** Settles when the fetch at start has ended, whatever its result. */
  readonly started: Promise<void>;

  constructor(opts: KeySetOptions) {
    this.#docs = new IssuerDocuments(opts.timeoutMs);
    this.#issuer = opts.issuer;
    this.#acceptedIssuer = opts.issuer;
    this.#configuredUri = opts.jwksUrl;
    this.#jwksUri = opts.jwksUrl;
    this.#span = httpCallSpan("auth.jwks", opts.jwksUrl ?? opts.issuer);
    this.#refreshMs = opts.refreshMs;
    this.#clock = opts.clock;
    this.#logger = opts.logger;
    const fetches = opts.metrics.jwksFetches;
    this.#fetched = {
      success: fetches.labels({ result: "success" }),
      error: fetches.labels({ result: "error" }),
    };
    this.started = this.#fetch().then(() => this.#schedule());
  }

  /** Changes whenever the held keys change; a refusal for an unknown key is kept only as long. */
  get version(): number {
    return this.#version;
  }

  /**
   * The `iss` tokens must carry: `auth.jwt.issuer`, or the discovery document's spelling of it when
   * the two differ by a trailing slash only (SPEC §11).
   */
  get issuer(): string {
    return this.#acceptedIssuer;
  }

  /** True when the last fetch succeeded. */
  get healthy(): boolean {
    return this.#healthy;
  }

  /**
   * The key for a JWS header (a jose `JWTVerifyGetKey`): chosen by `kid` and `alg` among the held
   * keys (RFC 7515 §4.1.4), refetching the set for a key it does not hold as the policy allows.
   * @param trace - the spans of the request asking: each fetch it waits for is an `auth.jwks` span
   * @throws KeySetUnavailableError when the key is not held and the last fetch failed
   * @throws errors.JWKSNoMatchingKey when the endpoint does not list the key
   * @throws errors.JWKSMultipleMatchingKeys when no `kid` picks one of several candidates
   */
  readonly resolve = async (
    header: JWSHeaderParameters,
    token: FlattenedJWSInput,
    trace: RequestTrace | null = null,
  ): Promise<CryptoKey> => {
    let key = await this.#lookup(header, token);
    if (key !== undefined) return key;
    if (this.#inflight !== undefined) {
      await this.#wait(this.#inflight, trace);
      key = await this.#lookup(header, token);
      if (key !== undefined) return key;
    }
    const now = this.#clock.nowMs();
    const last = this.#lastUnknownKidRefetchMs;
    if (last === undefined || now - last >= UNKNOWN_KID_REFETCH_MS) {
      this.#lastUnknownKidRefetchMs = now;
      await this.#wait(this.#fetch(), trace);
      key = await this.#lookup(header, token);
      if (key !== undefined) return key;
    }
    if (!this.#healthy) throw new KeySetUnavailableError();
    throw new errors.JWKSNoMatchingKey();
  };

  /** Fetches the set now (coalesced with a fetch in flight). Never rejects. */
  async refresh(): Promise<void> {
    await this.#fetch();
  }

  /** Stops the background refresh and closes the sockets. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#inflight;
    await this.#docs.close();
  }

  async #lookup(header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey | undefined> {
    if (this.#local === undefined) return undefined;
    try {
      return await this.#local(header, token);
    } catch (err) {
      if (err instanceof errors.JWKSNoMatchingKey) return undefined;
      throw err;
    }
  }

  #fetch(): Promise<Error | null> {
    this.#inflight ??= this.#load().finally(() => {
      this.#inflight = undefined;
    });
    return this.#inflight;
  }

  /** Waits for `fetch`, under an `auth.jwks` span when `trace` is recorded. */
  async #wait(fetch: Promise<Error | null>, trace: RequestTrace | null): Promise<void> {
    const span = childSpan(trace, this.#span);
    const failure = await fetch;
    if (span === null) return;
    if (failure === null) span.end();
    else endWithError(span, failure);
  }

  #schedule(): void {
    if (this.#closed) return;
    const delay = this.#healthy ? this.#refreshMs : Math.min(this.#refreshMs, RETRY_AFTER_FAILURE_MS);
    this.#timer = setTimeout(() => void this.#fetch().then(() => this.#schedule()), delay);
    this.#timer.unref();
  }

  /** One fetch (discovery first when needed); resolves to what it failed with, or null. */
  async #load(): Promise<Error | null> {
    let json: unknown;
    let local: LocalJWKSet;
    try {
      if (this.#jwksUri === undefined) {
        const found = await this.#docs.discover(this.#issuer);
        this.#jwksUri = found.jwksUri;
        if (found.issuer !== this.#acceptedIssuer) {
          this.#logger.warn(
            { configured: this.#issuer, discovered: found.issuer },
            "auth.jwt.issuer differs from the discovery document's issuer by a trailing slash; tokens are checked against the document's",
          );
          this.#acceptedIssuer = found.issuer;
        }
        this.#span = httpCallSpan("auth.jwks", this.#jwksUri);
      }
      json = await this.#docs.getJson(this.#jwksUri, "JWKS");
      local = createLocalJWKSet(json as JSONWebKeySet); // throws JWKSInvalid on a malformed set
    } catch (err) {
      this.#failed(err);
      return err instanceof Error ? err : new KeySetFetchError(String(err));
    }
    this.#fetched.success.inc();
    this.#healthy = true;
    if (this.#failingSinceMs !== undefined) {
      const outageMs = this.#clock.nowMs() - this.#failingSinceMs;
      this.#logger.info({ outageMs }, "JWKS endpoint answers again");
      this.#failingSinceMs = undefined;
    }
    const text = JSON.stringify(json);
    if (text === this.#text) return null;
    // A new local set only when the keys changed, so keys imported for verification stay imported.
    this.#text = text;
    this.#local = local;
    this.#version += 1;
    const kids = (json as JSONWebKeySet).keys.map((k) => k.kid ?? null);
    this.#logger.info({ kids }, "JWKS keys loaded");
    return null;
  }

  #failed(err: unknown): void {
    this.#fetched.error.inc();
    this.#healthy = false;
    // A discovered URI is looked up again next time: the issuer may have moved its key set.
    if (this.#configuredUri === undefined && this.#jwksUri !== undefined) {
      this.#jwksUri = undefined;
      this.#span = httpCallSpan("auth.jwks", this.#issuer);
    }
    if (this.#failingSinceMs !== undefined) return;
    this.#failingSinceMs = this.#clock.nowMs();
    this.#logger.warn(
      { err: err instanceof Error ? err.message : String(err), held: this.#local !== undefined },
      "JWKS fetch failed; keys already held keep working",
    );
  }
}
