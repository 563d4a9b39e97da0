/**
 * Which tokens are JWTs (SPEC §11): a JWS compact serialisation (RFC 7515 §7.1), three base64url
 * segments whose first decodes to a JSON object (the JOSE header, §4). The payload may be empty
 * (detached) and so may the signature (`alg: none`): both are still JWS-shaped, so they are
 * refused by JWT validation and never sent to introspection. Nothing is verified here.
 */

/** Three base64url segments (RFC 7515 §2: no padding), the first one non-empty. */
const COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/;

/**
 * @param token - a bearer token as sent
 * @returns true when `token` is shaped as a JWS compact serialisation with a JSON object header
 */
export function isJwsCompact(token: string): boolean {
  if (!COMPACT.test(token)) return false;
  const header = Buffer.from(token.slice(0, token.indexOf(".")), "base64url").toString("utf8");
  // Cheap refusal of what cannot be a JSON object before paying for a parse that would throw.
  if (!header.trimStart().startsWith("{")) return false;
  try {
    const parsed: unknown = JSON.parse(header);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed);
  } catch {
    return false;
  }
}
