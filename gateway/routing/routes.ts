/** Route table: longest path prefix wins (SPEC §7). Built once per configuration. */
import type { GatewayConfig } from "../config/schema.js";
import { compileRetryPolicy, connectOnly, type RetryPolicy } from "../config/retry-policy.js";
import { coversPrefix } from "./patterns.js";

/** A compiled route; plain data. */
export interface Route {
  /** The configured prefix, also the metrics label `route`. */
  prefix: string;
  upstream: string;
  /** Scopes the token must all carry. */
  scopes: readonly string[];
  stripPrefix: boolean;
  /** Time from the first try to a response head over every try (ms), or 0: per try, the upstream's. */
  timeoutMs: number;
  /** Largest request body (bytes), the route's or the listener's; 0 = no limit (SPEC §17). */
  maxBodyBytes: number;
  /** The route's retries, or null. */
  retry: RetryPolicy | null;
  /** {@link retry} restricted to `connect_failure`, for calls that are not idempotent, or null. */
  connectRetry: RetryPolicy | null;
}

/** Matches a normalised path to its route. */
export class RouteTable {
  readonly routes: readonly Route[];

  constructor(config: Pick<GatewayConfig, "routes" | "listen">) {
    this.routes = config.routes
      .map((r) => {
        const retry = compileRetryPolicy(r.retries, r.timeout_ms ?? 0);
        return {
          prefix: r.prefix,
          upstream: r.upstream,
          scopes: r.scopes,
          stripPrefix: r.strip_prefix,
          timeoutMs: r.timeout_ms ?? 0,
          maxBodyBytes: r.max_body_bytes ?? config.listen.max_body_bytes,
          retry,
          connectRetry: connectOnly(retry),
        };
      })
      .sort((a, b) => b.prefix.length - a.prefix.length);
  }

  /** @returns the route with the longest matching prefix, or undefined (answer 404). */
  match(path: string): Route | undefined {
    for (const route of this.routes) if (coversPrefix(route.prefix, path)) return route;
    return undefined;
  }
}
