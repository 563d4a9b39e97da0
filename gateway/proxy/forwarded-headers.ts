/**
 * Request and response header hygiene of a proxy: hop-by-hop removal (RFC 9110 §7.6.1), the
 * client IP behind `trust_proxy` hops, and `X-Forwarded-For/-Proto/-Host`.
 */
import type { HeaderMap } from "../base/request-facts.js";

/** Hop-by-hop fields of RFC 9110 §7.6.1 plus the legacy `proxy-connection` and `keep-alive`. */
const HOP_BY_HOP = [
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "upgrade",
  "proxy-authorization",
  // Each hop frames the body itself (undici refuses the field; Node re-frames what it relays).
  "transfer-encoding",
];

/**
 * Removes hop-by-hop fields in place (RFC 9110 §7.6.1, and `transfer-encoding`, which each hop
 * frames anew), including every field the `Connection` header names.
 * @param keepUpgrade - keep `connection`/`upgrade` (a WebSocket handshake taken by the `upgrade`
 *   listener); every other field `Connection` names is still removed
 */
export function stripHopByHop(headers: HeaderMap, keepUpgrade = false): void {
  const connection = headers.connection;
  if (connection !== undefined) {
    for (const name of String(connection).split(",")) {
      const n = name.trim().toLowerCase();
      if (n === "" || n === "close" || n === "keep-alive") continue;
      if (keepUpgrade && (n === "upgrade" || n === "connection")) continue;
      delete headers[n];
    }
  }
  for (const h of HOP_BY_HOP) {
    if (keepUpgrade && (h === "connection" || h === "upgrade")) continue;
    if (headers[h] !== undefined) delete headers[h];
  }
}

/**
 * The client address (SPEC §3): the socket peer, or with `trustProxy` N > 0 the entry N hops from
 * the right of `X-Forwarded-For` + peer (the Express `trust proxy` count semantics).
 * @param peer - the socket's peer address
 * @param xff - the request's `X-Forwarded-For`
 */
export function clientIp(peer: string, xff: string | string[] | undefined, trustProxy: number): string {
  if (trustProxy === 0) return peer;
  if (typeof xff !== "string") return peer;
  const hops = xff.split(",");
  const idx = hops.length - trustProxy; // hops[length] would be the peer itself
  const picked = idx >= 0 ? hops[idx] : hops[0];
  const ip = picked?.trim();
  return ip === undefined || ip === "" ? peer : ip;
}

/**
 * Sets `X-Forwarded-For` (appending the peer), `-Proto` and `-Host` on the outgoing headers, in place.
 * Client-sent `-Proto`/`-Host` are kept only when `trustProxy` > 0.
 * @param peer - the socket's peer address
 * @param secure - the client connection is TLS (`-Proto: https`)
 */
export function setForwardedHeaders(h: HeaderMap, peer: string, secure: boolean, trustProxy: number): void {
  const xff = h["x-forwarded-for"];
  h["x-forwarded-for"] = xff === undefined ? peer : `${String(xff)}, ${peer}`;
  if (trustProxy === 0 || h["x-forwarded-proto"] === undefined)
    h["x-forwarded-proto"] = secure ? "https" : "http";
  if (trustProxy === 0 || h["x-forwarded-host"] === undefined) {
    if (h.host !== undefined) h["x-forwarded-host"] = h.host;
    else delete h["x-forwarded-host"];
  }
}
