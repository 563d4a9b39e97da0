/**
 * The authenticator seam (STYLE: "authenticators in a chain", Envoy's filter chain and
 * oauth2-proxy's session loaders). Each authenticator says of a token "mine, and here is the
 * outcome" (synchronously, from its cache), "mine, but I need the network" (a miss, resolved
 * asynchronously), or "not mine" ({@link Authenticator.claims} false). Implementations: the token
 * cache in front of an introspection source (RFC 7662 or the static file), which claims every
 * token; a local JWT validator claims JWS-shaped tokens and goes in front of it.
 *
 * Each traces its own network calls (SPEC §13): {@link Authenticator.resolve} gets the request's
 * trace, and only the authenticator knows whether and when a miss goes to the network.
 */
import {
  childSpan,
  traced,
  type ChildSpanSpec,
  type RequestTrace,
} from "../observability/tracing/request-trace.js";
import type { TokenCache, TokenLookup } from "./token-cache.js";
import type { TokenInfo } from "../base/token-info.js";

/** An authentication source with a synchronous warm path. */
export interface Authenticator {
  /**
   * True when this authenticator decides this token ("mine").
   * @param hash - SHA-256 hex of the token, so a token already cached is recognised without parsing
   */
  claims(token: string, hash: string): boolean;
  /**
   * Warm path: a fresh cached answer (an inactive token answers `INACTIVE`), or undefined when
   * {@link resolve} must be called.
   * @param hash - SHA-256 hex of the token
   */
  cached(hash: string): TokenInfo | undefined;
  /**
   * True when the token was valid when last resolved and has not expired: a re-validation, not a
   * guess, so the anonymous-budget guard lets it through (SPEC §3 "cached valid tokens keep working").
   */
  knownActive(hash: string): boolean;
  /**
   * Miss path: asks the network (one call per token however many callers wait). Never rejects.
   * @param trace - the request's spans: each network call it makes or waits for is a child span
   *   of the SERVER span (SPEC §13 `auth.introspection`, `auth.jwks`); none without a call
   */
  resolve(token: string, hash: string, trace: RequestTrace | null): Promise<TokenLookup>;
  /** Releases caches, sockets and timers. */
  close(): Promise<void>;
}

/**
 * Cached RFC 7662 introspection (or the static file behind the same cache): claims every token, so
 * it goes last in a chain.
 */
export class CachedIntrospection implements Authenticator {
  /**
   * @param span - `auth.introspection` for an RFC 7662 endpoint, around each miss (a caller waiting
   *   for another's call to the same token included); none for the static file
   */
  constructor(
    private readonly cache: TokenCache,
    private readonly span?: ChildSpanSpec,
  ) {}

  claims(): boolean {
    return true;
  }

  cached(hash: string): TokenInfo | undefined {
    return this.cache.get(hash);
  }

  knownActive(hash: string): boolean {
    return this.cache.knownActive(hash);
  }

  resolve(token: string, hash: string, trace: RequestTrace | null): Promise<TokenLookup> {
    return traced(childSpan(trace, this.span), this.cache.fetch(token, hash));
  }

  close(): Promise<void> {
    return this.cache.close();
  }
}
