/**
 * Whose budget a call spends (SPEC §3, §10): the identity of an authenticated call, with its kind
 * in the storage key, so a subject, a client and a user named alike never share a budget.
 */
import type { TokenInfo } from "../base/token-info.js";

/**
 * Which token field a class counts by (SPEC §10 `identity`):
 * - `subject`: `sub`, else `client_id`, else `username` (one budget per user);
 * - `client`: `client_id`, else `sub`, else `username` (every user of one OAuth client shares it).
 */
export type IdentityKind = "subject" | "client";

/** An identity: the value shown in logs and the key the stores count under. */
export interface Identity {
  /** The raw field value (the access line's `identity`). */
  value: string;
  /** The value prefixed by the field it came from: `sub:`, `client:`, `user:` (or `token:`, `ip:`). */
  key: string;
}

/**
 * The identity of a token for a class.
 * @param tokenHash - SHA-256 hex of the token: a token with none of the fields is its own identity
 *   (`token:` + the first 32 hex digits, never the token)
 */
export function identityOf(info: TokenInfo, kind: IdentityKind, tokenHash: string): Identity {
  const { sub, clientId, username } = info;
  if (kind === "client" && clientId !== undefined) return { value: clientId, key: `client:${clientId}` };
  if (sub !== undefined) return { value: sub, key: `sub:${sub}` };
  if (clientId !== undefined) return { value: clientId, key: `client:${clientId}` };
  if (username !== undefined) return { value: username, key: `user:${username}` };
  const value = `token:${tokenHash.slice(0, 32)}`;
  return { value, key: value };
}

/** The key of the anonymous class's budget for a client address (SPEC §3). */
export function ipKey(clientIp: string): string {
  return `ip:${clientIp}`;
}

/**
 * The key of the brute-force guard's budget for a client address (SPEC §3): the tokens that failed
 * to resolve from it. Its own identity kind, so the guard and the anonymous class never share
 * counts although both are reported as `anonymous`.
 */
export function guardKey(clientIp: string): string {
  return `guard:${clientIp}`;
}
