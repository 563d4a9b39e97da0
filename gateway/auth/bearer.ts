/**
 * `Authorization` parsing, RFC 6750 §2.1:
 * `credentials = "Bearer" 1*SP b64token`, `b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
 * The scheme is case-insensitive (RFC 9110 §11.1). `auth.schemes` may add `token`, the scheme
 * GitHub's API accepts and Octokit sends for opaque tokens (`Authorization: token X`); its
 * credentials are parsed as a b64token too.
 */

import type { AuthScheme } from "../config/auth-schema.js";

/** Longest token accepted (characters); longer headers are answered as malformed. */
export const MAX_TOKEN_LENGTH = 4096;

/** Outcome of parsing: the token, `missing` (no header) or `malformed`. */
export type BearerParse = { token: string } | "missing" | "malformed";

/** Parses `Authorization` values with the schemes it was built for. */
export class CredentialsParser {
  readonly #pattern: RegExp;

  /** @param schemes - accepted schemes (`auth.schemes`), matched case-insensitively */
  constructor(schemes: readonly AuthScheme[] = ["Bearer"]) {
    this.#pattern = new RegExp(`^(?:${schemes.join("|")}) +([A-Za-z0-9\\-._~+/]+=*)$`, "i");
  }

  /**
   * @param header - the `Authorization` header value as Node parsed it, or undefined
   * @example new CredentialsParser(["Bearer", "token"]).parse("token abc") // { token: "abc" }
   */
  parse(header: string | undefined): BearerParse {
    if (header === undefined) return "missing";
    if (header.length > MAX_TOKEN_LENGTH + 16) return "malformed";
    const m = this.#pattern.exec(header);
    // The length check above only bounds the regex's input; the token itself is held to the limit.
    return m === null || m[1]!.length > MAX_TOKEN_LENGTH ? "malformed" : { token: m[1]! };
  }
}

const BEARER_ONLY = new CredentialsParser();

/**
 * `Bearer` only (RFC 6750 §2.1).
 * @example parseBearer("Bearer abc.def") // { token: "abc.def" }
 */
export function parseBearer(header: string | undefined): BearerParse {
  return BEARER_ONLY.parse(header);
}
