/**
 * The headers and path the upstream receives (SPEC §5, §6), prepared in place on the request's
 * header map once the core decided to proxy.
 */
import type { HeaderMap, RequestFacts } from "../base/request-facts.js";
import type { TokenInfo } from "../base/token-info.js";
import type { Route } from "../routing/routes.js";
import { setForwardedHeaders, stripHopByHop } from "../proxy/forwarded-headers.js";

/** Identity headers the gateway sets; client copies are removed first. */
const CLIENT_AUTH_HEADERS = [
  "x-auth-subject",
  "x-auth-client-id",
  "x-auth-scope",
  "x-client-cert-subject",
] as const;

/** Settings of the configuration that shape the upstream request. */
export interface UpstreamRequestSettings {
  /** `auth.forward_authorization`. */
  forwardAuthorization: boolean;
  /** `trust_proxy`. */
  trustProxy: number;
}

/**
 * Edits `facts.headers` into the upstream request's headers: hop-by-hop fields removed (an upgrade
 * keeps `Connection: Upgrade`), `Expect` dropped (the transport answered it), `X-Auth-*` from the
 * token after removing client copies, `X-Request-Id`, `X-Forwarded-For/-Proto/-Host`.
 * @param forwardPath - normalised path to forward (dot segments removed, encodings kept)
 * @param search - `?query` as sent, or ""
 * @returns the path and query to send
 */
export function prepareUpstreamRequest(
  facts: RequestFacts,
  requestId: string,
  info: TokenInfo,
  route: Route,
  forwardPath: string,
  search: string,
  settings: UpstreamRequestSettings,
): string {
  const h: HeaderMap = facts.headers;
  stripHopByHop(h, facts.upgrade);
  // Forwarded, undici would refuse it and the upstream would wait for a 100 that is not relayed.
  if (h.expect !== undefined) delete h.expect;
  for (const name of CLIENT_AUTH_HEADERS) if (h[name] !== undefined) delete h[name];
  if (info.sub !== undefined) h["x-auth-subject"] = info.sub;
  if (info.clientId !== undefined) h["x-auth-client-id"] = info.clientId;
  if (info.scope.length > 0) h["x-auth-scope"] = info.scope.join(" ");
  if (facts.clientCertSubject !== null) h["x-client-cert-subject"] = facts.clientCertSubject;
  if (!settings.forwardAuthorization) delete h.authorization;
  h["x-request-id"] = requestId;
  setForwardedHeaders(h, facts.peerAddress, facts.secure, settings.trustProxy);
  let path = forwardPath;
  if (route.stripPrefix) {
    const prefix = route.prefix;
    path = path.slice(prefix.endsWith("/") ? prefix.length - 1 : prefix.length) || "/";
  }
  return path + search;
}
