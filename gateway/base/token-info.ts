/**
 * Plain data of authentication (SPEC §5): what a token source answers and what the pipeline, the
 * limiter (identity, plan) and the proxy (forwarded subject headers) read.
 */
import { hash } from "node:crypto";

/**
 * The fields of an RFC 7662 §2.2 introspection response the gateway uses.
 * `exp` is epoch seconds; `scope` is the space-separated list split into an array.
 */
export interface TokenInfo {
  active: boolean;
  sub?: string;
  clientId?: string;
  username?: string;
  scope: readonly string[];
  /** Expiry (epoch s), when the source gave one. */
  exp?: number;
  /**
   * The token members the configuration reads beyond the fields above (today the one named by
   * `rate_limits.plan_claim`, SPEC §10), by member name, with the value as the source gave it
   * (unchecked: a non-string plan claim is the plan resolver's to count and ignore). Every source
   * fills it the same way from the `claimNames` it is built with: introspection from the RFC 7662
   * §2.2 response's extension members, the static file from the entry's field, a JWT validator
   * from the claims set. Only the configured names are kept, so a cached token holds no more than
   * is read; absent when the token carries none of them. Null-prototype and frozen.
   */
  claims?: Readonly<Record<string, unknown>>;
}

/**
 * The members of `source` named in `names` that it has (own properties, not `undefined`), as a
 * frozen null-prototype record for {@link TokenInfo.claims}; undefined when there are none.
 * @param source - an introspection response, a static-file entry, a JWT claims set
 */
export function pickClaims(
  source: Readonly<Record<string, unknown>>,
  names: readonly string[],
): Readonly<Record<string, unknown>> | undefined {
  let claims: Record<string, unknown> | undefined;
  for (const name of names) {
    if (!Object.hasOwn(source, name) || source[name] === undefined) continue;
    claims ??= Object.create(null) as Record<string, unknown>;
    claims[name] = source[name];
  }
  return claims === undefined ? undefined : Object.freeze(claims);
}

/** The answer for an unknown, inactive or expired token. */
export const INACTIVE: TokenInfo = Object.freeze({ active: false, scope: Object.freeze([]) });

/**
 * SHA-256 hex (lower case) of a token: the key of the token cache and of the static source, so a
 * token itself is never kept or logged.
 */
export function hashToken(token: string): string {
  return hash("sha256", token, "hex");
}
