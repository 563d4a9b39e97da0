/**
 * Resolved policies (SPEC §4, §10), compiled once per configuration the way envoyproxy/ratelimit
 * builds its limit tree at load: everything a request needs to be counted — class name, windows,
 * algorithm, mode, the identity kind it counts by, and its header values — so the hot path only
 * looks things up.
 */
import type { GatewayConfig } from "../config/schema.js";
import type { IdentityKind } from "./identity.js";
import type { Algorithm, LimitPolicy, WindowSpec } from "./limiter.js";

/** The name of the unauthenticated class (SPEC §3). */
export const ANONYMOUS = "anonymous";

/** A limit class ready for the hot path. Frozen. */
export interface ResolvedPolicy extends LimitPolicy {
  /** Whose budget a call spends (the anonymous class counts by client IP and ignores it). */
  identity: IdentityKind;
  /** `RateLimit-Policy` value (draft-ietf-httpapi-ratelimit-headers-10), or null without `headers.ietf`. */
  ietfPolicy: string | null;
  /** `RateLimit` item name per window, in `windows` order (the decision's `windowIndex` picks one). */
  ietfItems: readonly string[];
}

/** The compiled limit classes of one configuration. */
export interface PolicySet {
  /** By class name, in configuration order (the order of `GET /rate_limit`). */
  readonly byClass: ReadonlyMap<string, ResolvedPolicy>;
  readonly anonymous: ResolvedPolicy;
}

function windowsOf(ws: readonly { limit: number; window_s: number }[]): WindowSpec[] {
  return ws.map((w) => Object.freeze({ limit: w.limit, windowS: w.window_s }));
}

/**
 * One policy. Item names of `RateLimit-Policy`: the class, suffixed with the window length when the
 * class has several (`"write-1s";q=10;w=1, "write-3600s";q=1000;w=3600`).
 */
export function resolvePolicy(
  className: string,
  algorithm: Algorithm,
  mode: "enforce" | "shadow",
  windows: readonly WindowSpec[],
  identity: IdentityKind,
  ietf: boolean,
): ResolvedPolicy {
  const ietfItems = windows.map((w) => (windows.length > 1 ? `${className}-${w.windowS}s` : className));
  const ietfPolicy = ietf
    ? windows.map((w, i) => `"${ietfItems[i]!}";q=${w.limit};w=${w.windowS}`).join(", ")
    : null;
  return Object.freeze({
    className,
    algorithm,
    mode,
    windows: Object.freeze(windows),
    identity,
    ietfPolicy,
    ietfItems: Object.freeze(ietfItems),
  });
}

/** Compiles `rate_limits.classes` and `rate_limits.anonymous`. */
export function compilePolicies(config: GatewayConfig): PolicySet {
  const ietf = config.headers.ietf;
  const byClass = new Map<string, ResolvedPolicy>();
  for (const [name, c] of Object.entries(config.rate_limits.classes)) {
    byClass.set(name, resolvePolicy(name, c.algorithm, c.mode, windowsOf(c.windows), "subject", ietf));
  }
  const anonymous = resolvePolicy(
    ANONYMOUS,
    "sliding_window",
    "enforce",
    windowsOf(config.rate_limits.anonymous.windows),
    "subject",
    ietf,
  );
  return { byClass, anonymous };
}
