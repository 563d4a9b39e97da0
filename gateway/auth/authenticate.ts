/**
 * Authentication as an outcome, not an exception (a failed authentication is still counted in the
 * anonymous class and still gets headers). The warm path is synchronous: parse the header, hash
 * the token, look it up in the cache. A miss hands the pipeline what it needs to fetch, so the
 * pipeline can first check the caller's anonymous budget (SPEC §3 brute-force guard).
 */
import { parseBearer } from "./bearer.js";
import { TokenCache } from "./token-cache.js";
import type { TokenInfo } from "./types.js";

/** Result of {@link authenticateCached}. */
export type AuthOutcome =
  | { kind: "valid"; info: TokenInfo; hash: string }
  | { kind: "missing" }
  | { kind: "malformed" }
  | { kind: "invalid" }
  | { kind: "miss"; token: string; hash: string };

const MISSING: AuthOutcome = Object.freeze({ kind: "missing" });
const MALFORMED: AuthOutcome = Object.freeze({ kind: "malformed" });
const INVALID: AuthOutcome = Object.freeze({ kind: "invalid" });

/**
 * RFC 6750 §2.1 header parsing plus a synchronous token-cache lookup. The cache never answers an
 * active entry at or past its `exp` (RFC 7662 §2.2), so `active` is all there is to check.
 * @param header - the request's `Authorization` value
 */
export function authenticateCached(header: string | undefined, cache: TokenCache): AuthOutcome {
  const parsed = parseBearer(header);
  if (parsed === "missing") return MISSING;
  if (parsed === "malformed") return MALFORMED;
  const hash = TokenCache.hashToken(parsed.token);
  const info = cache.get(hash);
  if (info === undefined) return { kind: "miss", token: parsed.token, hash };
  return info.active ? { kind: "valid", info, hash } : INVALID;
}

/** True when the token carries every scope in `required`. */
export function hasScopes(info: TokenInfo, required: readonly string[]): boolean {
  for (const s of required) if (!info.scope.includes(s)) return false;
  return true;
}
