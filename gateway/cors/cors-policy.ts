/**
 * CORS for browser clients (SPEC §14; the Fetch standard's CORS protocol), compiled once per
 * configuration. The gateway answers preflights itself and adds the CORS fields to every response
 * to an allowed origin — its own 400/401/403/404/429/5xx included, so a page can read its
 * rate-limit status and the 429 body instead of seeing an opaque network error.
 */
import type { GatewayConfig } from "../config/schema.js";
import type { HeaderMap } from "../base/request-facts.js";

type CorsConfig = NonNullable<GatewayConfig["cors"]>;

/** Fields a browser script may read (beyond the CORS-safelisted ones). */
const EXPOSED = [
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
  "X-RateLimit-Resource",
  "Retry-After",
  "X-Request-Id",
];
const DNS_LABEL = "[a-z0-9](?:[a-z0-9-]*[a-z0-9])?";

/** The compiled `cors` block. */
export class CorsPolicy {
  private readonly any: boolean;
  private readonly exact: ReadonlySet<string>;
  private readonly patterns: readonly RegExp[];
  readonly credentials: boolean;
  readonly allowMethods: string;
  readonly allowHeaders: string;
  readonly maxAge: string;
  readonly exposeHeaders: string;

  /** @param ietf - `headers.ietf`: `RateLimit` and `RateLimit-Policy` are exposed too */
  constructor(cfg: CorsConfig, ietf: boolean) {
    this.any = cfg.allowed_origins.includes("*");
    this.exact = new Set(cfg.allowed_origins.filter((o) => !o.includes("*")).map((o) => o.toLowerCase()));
    this.patterns = cfg.allowed_origins.filter((o) => o !== "*" && o.includes("*")).map(originPattern);
    this.credentials = cfg.allow_credentials;
    this.allowMethods = cfg.allowed_methods.join(", ");
    this.allowHeaders = cfg.allowed_headers.join(", ");
    this.maxAge = String(cfg.max_age_s);
    this.exposeHeaders = (ietf ? [...EXPOSED, "RateLimit", "RateLimit-Policy"] : EXPOSED).join(", ");
  }

  /**
   * @param origin - the request's `Origin`
   * @returns the `Access-Control-Allow-Origin` value for it (`*` for `["*"]` without credentials,
   *   else the origin itself), or null when it is not allowed
   */
  allowOrigin(origin: string): string | null {
    if (this.any) return this.credentials ? origin : "*";
    const o = origin.toLowerCase();
    if (this.exact.has(o)) return origin;
    for (const p of this.patterns) if (p.test(o)) return origin;
    return null;
  }

  /**
   * Adds the response fields (SPEC §14) in place: the upstream's `Access-Control-*` fields are
   * removed, `Origin` is added to `Vary`, and for an allowed origin the allow, credentials and
   * expose fields are set.
   * @param allowed - {@link allowOrigin}'s answer for the request, or null
   * @param fromUpstream - the fields came from the upstream (its `Access-Control-*` are dropped)
   */
  decorate(headers: HeaderMap, allowed: string | null, fromUpstream: boolean): void {
    if (fromUpstream)
      for (const name in headers) if (name.startsWith("access-control-")) delete headers[name];
    const vary = headers.vary;
    headers.vary = vary === undefined || vary === "" ? "Origin" : `${String(vary)}, Origin`;
    if (allowed === null) return;
    headers["access-control-allow-origin"] = allowed;
    if (this.credentials) headers["access-control-allow-credentials"] = "true";
    headers["access-control-expose-headers"] = this.exposeHeaders;
  }

  /** Adds the preflight answer's allow fields for an allowed origin, in place. */
  preflight(headers: HeaderMap): void {
    headers["access-control-allow-methods"] = this.allowMethods;
    headers["access-control-allow-headers"] = this.allowHeaders;
    headers["access-control-max-age"] = this.maxAge;
  }
}

/**
 * `https://*.example.com`: scheme and port exact, `*` standing for one or more DNS labels, so
 * neither `https://evil-example.com` nor `https://example.com.evil.net` nor `http://a.example.com`
 * matches.
 */
function originPattern(origin: string): RegExp {
  const escaped = origin.toLowerCase().replace(/[.+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`^${escaped.replace("*", `${DNS_LABEL}(?:\\.${DNS_LABEL})*`)}$`);
}
