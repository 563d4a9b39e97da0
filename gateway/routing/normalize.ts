/**
 * Request-target normalisation (RFC 3986 §6.2.2): percent-decoding and dot-segment removal
 * (§5.2.4), so that `/v1/./search`, `/v1/%73earch` and `/v1/x/../search` cannot dodge a route or a
 * limit class.
 */

/** Result of {@link normalizeTarget}: `null` means the target is malformed (answer 400). */
export interface NormalizedTarget {
  /** Fully decoded, dot-free path used for route and class matching. */
  matchPath: string;
  /** Path to forward: dot segments removed, other percent-encodings kept as sent. */
  forwardPath: string;
  /** `?query` as sent, or "". */
  search: string;
}

const DOT_SEGMENT = /(?:^|\/)\.\.?(?:\/|$)/;
const ENCODED_DOT = /%2e/gi;
const BACKSLASH = /\\/g;

/**
 * RFC 3986 §5.2.4 remove_dot_segments, for an absolute path.
 * @example removeDotSegments("/a/b/../c/./d") === "/a/c/d"
 */
export function removeDotSegments(path: string): string {
  if (!DOT_SEGMENT.test(path)) return path;
  const out: string[] = [];
  const segments = path.split("/");
  for (let i = 1; i < segments.length; i++) {
    const seg = segments[i]!;
    const last = i === segments.length - 1;
    if (seg === ".") {
      if (last) out.push("");
    } else if (seg === "..") {
      out.pop();
      if (last) out.push("");
    } else out.push(seg);
  }
  return "/" + out.join("/");
}

/**
 * Splits and normalises an origin-form request target (`/path?query`).
 * @returns the normalised parts, or `null` when the target is not origin-form, has a malformed
 *   percent-encoding, a raw backslash, or decodes to invalid UTF-8 or a NUL byte
 */
export function normalizeTarget(url: string): NormalizedTarget | null {
  if (url.charCodeAt(0) !== 47 /* / */) return null;
  const q = url.indexOf("?");
  const rawPath = q === -1 ? url : url.slice(0, q);
  const search = q === -1 ? "" : url.slice(q);
  // Not a URI character (RFC 3986 §2), and WHATWG URL parsers (http-proxy's among them) read it as
  // "/": `/v1/x\..\..\admin` would reach the upstream as `/admin`.
  if (rawPath.indexOf("\\") !== -1) return null;
  if (rawPath.indexOf("%") === -1) {
    const p = removeDotSegments(rawPath);
    return { matchPath: p, forwardPath: p, search };
  }
  // Encoded dots are dots (unreserved, §2.3): decode them before removing dot segments.
  const forwardPath = removeDotSegments(rawPath.replace(ENCODED_DOT, "."));
  let decoded: string;
  try {
    decoded = decodeURIComponent(forwardPath);
  } catch {
    return null;
  }
  if (decoded.indexOf("\0") !== -1) return null;
  // A decoded %2F may have produced new dot segments; match on the fully resolved form, reading a
  // decoded %5C as the separator some upstreams take it for.
  if (decoded.indexOf("\\") !== -1) decoded = decoded.replace(BACKSLASH, "/");
  return { matchPath: removeDotSegments(decoded), forwardPath, search };
}
