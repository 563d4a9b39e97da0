/**
 * Authentication as an outcome, not an exception (a failed authentication is still counted in the
 * anonymous class and still gets headers). The warm path is synchronous: parse the header (RFC 6750
 * §2.1), hash the token, ask the first authenticator that claims it for a cached answer. A miss
 * hands the caller what it needs to resolve it, so the anonymous-budget guard
 * (`network-guard.ts`) can run before any network call.
 */
import type { Authenticator } from "./authenticator.js";
import type { AuthScheme } from "../config/auth-schema.js";
import { CredentialsParser } from "./bearer.js";
import { hashToken, type TokenInfo } from "../base/token-info.js";

/** Result of {@link AuthenticatorChain.authenticate}. */
export type AuthOutcome =
  | { kind: "valid"; info: TokenInfo; hash: string }
  | { kind: "missing" }
  | { kind: "malformed" }
  | { kind: "invalid" }
  | { kind: "miss"; token: string; hash: string; authenticator: Authenticator };

const MISSING: AuthOutcome = Object.freeze({ kind: "missing" });
const MALFORMED: AuthOutcome = Object.freeze({ kind: "malformed" });
const INVALID: AuthOutcome = Object.freeze({ kind: "invalid" });

/** Authenticators in order; the first that claims a token decides it. */
export class AuthenticatorChain {
  readonly #credentials: CredentialsParser;

  /**
   * @param authenticators - most specific first (a JWT validator before introspection)
   * @param schemes - `auth.schemes`: the Authorization schemes accepted @default ["Bearer"]
   */
  constructor(
    readonly authenticators: readonly Authenticator[],
    schemes: readonly AuthScheme[] = ["Bearer"],
  ) {
    this.#credentials = new CredentialsParser(schemes);
  }

  /**
   * @param header - the request's `Authorization` value
   * @returns the outcome; a token no authenticator claims is `invalid`
   */
  authenticate(header: string | undefined): AuthOutcome {
    const parsed = this.#credentials.parse(header);
    if (parsed === "missing") return MISSING;
    if (parsed === "malformed") return MALFORMED;
    const token = parsed.token;
    const hash = hashToken(token);
    for (const authenticator of this.authenticators) {
      if (!authenticator.claims(token, hash)) continue;
      const info = authenticator.cached(hash);
      if (info === undefined) return { kind: "miss", token, hash, authenticator };
      // A source never answers an active entry at or past its `exp` (RFC 7662 §2.2).
      return info.active ? { kind: "valid", info, hash } : INVALID;
    }
    return INVALID;
  }

  /** Closes every authenticator. */
  async close(): Promise<void> {
    await Promise.all(this.authenticators.map((a) => a.close()));
  }
}

/** True when the token carries every scope in `required`. */
export function hasScopes(info: TokenInfo, required: readonly string[]): boolean {
  for (const s of required) if (!info.scope.includes(s)) return false;
  return true;
}
