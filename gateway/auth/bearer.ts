/**
 * `Authorization: Bearer` parsing, RFC 6750 §2.1:
 * `credentials = "Bearer" 1*SP b64token`, `b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
 * The scheme is case-insensitive (RFC 9110 §11.1).
 */

/** Longest token accepted (characters); longer headers are answered as malformed. */
export const MAX_TOKEN_LENGTH = 4096;

const BEARER = /^[Bb][Ee][Aa][Rr][Ee][Rr] +([A-Za-z0-9\-._~+/]+=*)$/;

/** Outcome of parsing: the token, `missing` (no header) or `malformed`. */
export type BearerParse = { token: string } | "missing" | "malformed";

/**
 * @param header - the `Authorization` header value as Node parsed it, or undefined
 * @example parseBearer("Bearer abc.def") // { token: "abc.def" }
 */
export function parseBearer(header: string | undefined): BearerParse {
  if (header === undefined) return "missing";
  if (header.length > MAX_TOKEN_LENGTH + 16) return "malformed";
  const m = BEARER.exec(header);
  // The length check above only bounds the regex's input; the token itself is held to the limit.
  return m === null || m[1]!.length > MAX_TOKEN_LENGTH ? "malformed" : { token: m[1]! };
}
