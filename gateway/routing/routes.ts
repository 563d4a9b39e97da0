/** Route table: longest path prefix wins (SPEC §7). Built once per configuration. */
import type { GatewayConfig } from "../config/schema.js";
import { coversPrefix } from "./patterns.js";

/** A compiled route; plain data. */
export interface Route {
  /** The configured prefix, also the metrics label `route`. */
  prefix: string;
  upstream: string;
  /** Scopes the token must all carry. */
  scopes: readonly string[];
  stripPrefix: boolean;
}

/** Matches a normalised path to its route. */
export class RouteTable {
  readonly routes: readonly Route[];

  constructor(config: Pick<GatewayConfig, "routes">) {
    this.routes = config.routes
      .map((r) => ({ prefix: r.prefix, upstream: r.upstream, scopes: r.scopes, stripPrefix: r.strip_prefix }))
      .sort((a, b) => b.prefix.length - a.prefix.length);
  }

  /** @returns the route with the longest matching prefix, or undefined (answer 404). */
  match(path: string): Route | undefined {
    for (const route of this.routes) if (coversPrefix(route.prefix, path)) return route;
    return undefined;
  }
}
