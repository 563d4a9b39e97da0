/**
 * Plain data of authentication (SPEC §5): what an introspection source answers and what the
 * pipeline receives.
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
   * String-valued top-level claims of a JWT access token (RFC 7519 §4, RFC 9068 §2.2) other than
   * the registered and mapped ones, kept so that a field named in configuration (the plan claim of
   * SPEC §10) can be read without the token. Absent when there are none.
   */
  claims?: Readonly<Record<string, string>>;
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

/** An introspection source answers for one token or fails. */
export interface IntrospectionSource {
  /**
   * @param token - the bearer token as sent (never logged)
   * @returns the source's answer; an unknown token is `{ active: false }`
   * @throws IntrospectionUnavailableError when the source cannot answer (network, timeout, 5xx,
   *   unparsable reply)
   */
  introspect(token: string): Promise<TokenInfo>;
  /** Releases sockets and timers. */
  close?(): Promise<void>;
}

/** The source could not give an answer; the token cache may serve a stale entry instead. */
export class IntrospectionUnavailableError extends Error {
  /** Short reason for logs and metrics: `timeout`, `network`, `status`, `invalid_response`. */
  readonly reason: string;
  constructor(reason: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "IntrospectionUnavailableError";
    this.reason = reason;
  }
}

/** The identity an authenticated call is counted against (SPEC §3): `sub`, else `client_id`. */
export function identityOf(info: TokenInfo): string | undefined {
  return info.sub ?? info.clientId ?? info.username;
}
