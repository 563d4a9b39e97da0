/**
 * Everything the pipeline needs for one configuration, built once (construction does the parsing
 * and allocation) and swapped atomically on reload. The limiter and the token cache survive a
 * reload when their settings did not change, so counts and cached tokens are not lost.
 */
import type { Logger } from "pino";
import { StaticTokenSource } from "./auth/static-source.js";
import { IntrospectionClient } from "./auth/introspection.js";
import { TokenCache } from "./auth/token-cache.js";
import type { IntrospectionSource } from "./auth/types.js";
import type { Clock } from "./clock.js";
import type { GatewayConfig } from "./config/schema.js";
import type { GatewayMetrics } from "./observability/metrics.js";
import { createLimiter, type LimiterHandle } from "./ratelimit/create.js";
import { ietfPolicyOf } from "./ratelimit/headers.js";
import type { LimitPolicy } from "./ratelimit/limiter.js";
import { Classifier } from "./routing/classify.js";
import { RouteTable } from "./routing/routes.js";
import { UpstreamProxy, type ProxyHooks } from "./proxy/upstream-proxy.js";

/** Shared dependencies (injected; no module singletons). */
export interface RuntimeDeps {
  clock: Clock;
  metrics: GatewayMetrics;
  logger: Logger;
  /** Directory relative paths in the config resolve against. */
  baseDir: string;
}

/** The compiled configuration. */
export interface Runtime {
  readonly config: GatewayConfig;
  readonly routes: RouteTable;
  readonly classifier: Classifier;
  readonly policies: ReadonlyMap<string, LimitPolicy>;
  readonly anonymous: LimitPolicy;
  /** `RateLimit-Policy` per class, when `headers.ietf`. */
  readonly ietfPolicies: ReadonlyMap<string, string> | null;
  readonly proxies: ReadonlyMap<string, UpstreamProxy>;
  readonly tokenCache: TokenCache;
  readonly limiter: LimiterHandle;
  /** Anonymous policy item for `headers.ietf`. */
  readonly anonymousIetf: string | undefined;
}

/** The name of the unauthenticated class (SPEC §3). */
export const ANONYMOUS = "anonymous";

function policiesOf(config: GatewayConfig): Map<string, LimitPolicy> {
  const out = new Map<string, LimitPolicy>();
  for (const [name, c] of Object.entries(config.rate_limits.classes)) {
    out.set(name, {
      name,
      algorithm: c.algorithm,
      mode: c.mode,
      windows: c.windows.map((w) => ({ limit: w.limit, windowS: w.window_s })),
    });
  }
  return out;
}

function sourceOf(config: GatewayConfig, deps: RuntimeDeps): IntrospectionSource {
  const i = config.auth.introspection;
  if (i !== undefined) {
    return new IntrospectionClient({
      url: i.url,
      clientId: i.client_id,
      clientSecret: i.client_secret,
      timeoutMs: i.timeout_ms,
      metrics: deps.metrics,
    });
  }
  return new StaticTokenSource(config.auth.static!.tokens_file, deps.baseDir);
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/**
 * Compiles a configuration. Pass the previous runtime to keep its limiter and token cache when
 * their settings are unchanged.
 * @throws Error when a tokens file cannot be loaded
 */
export function buildRuntime(
  config: GatewayConfig,
  deps: RuntimeDeps,
  hooks: ProxyHooks,
  previous?: Runtime,
): Runtime {
  const keepCache =
    previous !== undefined && same(previous.config.auth, config.auth) && config.auth.static === undefined;
  const keepLimiter =
    previous !== undefined &&
    same(previous.config.rate_limits.store, config.rate_limits.store) &&
    same(previous.config.rate_limits.memory, config.rate_limits.memory) &&
    previous.config.rate_limits.failure_mode === config.rate_limits.failure_mode &&
    previous.config.rate_limits.expected_replicas === config.rate_limits.expected_replicas;
  const authCfg = config.auth.introspection ?? config.auth.static!;
  const tokenCache = keepCache
    ? previous.tokenCache
    : new TokenCache({
        source: sourceOf(config, deps),
        config: authCfg.cache,
        clock: deps.clock,
        metrics: deps.metrics,
        logger: deps.logger,
      });
  const policies = policiesOf(config);
  const anonymous: LimitPolicy = {
    name: ANONYMOUS,
    algorithm: "sliding_window",
    mode: "enforce",
    windows: config.rate_limits.anonymous.windows.map((w) => ({ limit: w.limit, windowS: w.window_s })),
  };
  const proxies = new Map<string, UpstreamProxy>();
  for (const [name, u] of Object.entries(config.upstreams)) {
    const reuse = previous !== undefined && same(previous.config.upstreams[name], u);
    proxies.set(name, reuse ? previous.proxies.get(name)! : new UpstreamProxy(name, u, hooks));
  }
  let ietfPolicies: Map<string, string> | null = null;
  if (config.headers.ietf) {
    ietfPolicies = new Map();
    for (const p of policies.values()) ietfPolicies.set(p.name, ietfPolicyOf(p));
  }
  return {
    config,
    routes: new RouteTable(config),
    classifier: new Classifier(config),
    policies,
    anonymous,
    ietfPolicies,
    anonymousIetf: config.headers.ietf ? ietfPolicyOf(anonymous) : undefined,
    proxies,
    tokenCache,
    limiter: keepLimiter ? previous.limiter : createLimiter(config, deps),
  };
}

/**
 * Releases what `next` does not reuse from `old` (upstream agents, limiter, token cache). Call it
 * once requests started on `old` have finished; pass `next` undefined at shutdown.
 */
export async function releaseRuntime(old: Runtime, next?: Runtime): Promise<void> {
  for (const [name, p] of old.proxies) if (next?.proxies.get(name) !== p) p.close();
  if (next?.tokenCache !== old.tokenCache) await old.tokenCache.close();
  if (next?.limiter !== old.limiter) await old.limiter.limiter.close();
}
