/**
 * The authenticator chain a configuration's `auth` block builds (SPEC §5, §11), for the runtime.
 */
import { CachedIntrospection, type Authenticator } from "../auth/authenticator.js";
import { IntrospectionClient } from "../auth/introspection.js";
import type { IntrospectionSource } from "../auth/introspection-source.js";
import { JwtAuthenticator } from "../auth/jwt-authenticator.js";
import { StaticTokenSource } from "../auth/static-source.js";
import { TokenCache } from "../auth/token-cache.js";
import type { GatewayConfig } from "../config/schema.js";
import { httpCallSpan } from "../observability/tracing/request-trace.js";
import { budgetClaimsOf } from "../ratelimit/budgets.js";
import type { RuntimeDeps } from "./runtime-deps.js";

/**
 * The chain of `auth`, most specific first: local JWT validation (SPEC §11) claims JWS-shaped
 * tokens, then the static file or RFC 7662 introspection, each behind its token cache, takes every
 * other token. JWT validation alone claims every token (a non-JWS one is refused as malformed).
 * Every source keeps the token members named by `rate_limits.plan_claim` and by the budgets' keys
 * (SPEC §22) in `TokenInfo.claims`.
 * @throws Error when the static tokens file cannot be read or parsed (before anything holding
 *   sockets or timers is made)
 */
export function authenticatorsOf(config: GatewayConfig, deps: RuntimeDeps): Authenticator[] {
  const { jwt, introspection: i, static: file } = config.auth;
  const claim = config.rate_limits.plan_claim;
  const valueClaims = budgetClaimsOf(config);
  const claimNames = claim === undefined ? valueClaims : [claim, ...valueClaims];
  const chain: Authenticator[] = [];
  // The static file first: it may throw, and nothing holding sockets or timers exists yet.
  let source: IntrospectionSource | undefined;
  if (i !== undefined) {
    source = new IntrospectionClient({
      url: i.url,
      clientId: i.client_id,
      clientSecret: i.client_secret,
      timeoutMs: i.timeout_ms,
      metrics: deps.metrics,
      claimNames,
    });
  } else if (file !== undefined) {
    source = new StaticTokenSource(file.tokens_file, deps.baseDir, claimNames, valueClaims);
  }
  if (jwt !== undefined) {
    const claimsEveryToken = source === undefined;
    chain.push(new JwtAuthenticator({ config: jwt, claimsEveryToken, claimNames, ...deps }));
  }
  if (source !== undefined) {
    const cache = new TokenCache({ source, config: (i ?? file)!.cache, ...deps });
    const span = i === undefined ? undefined : httpCallSpan("auth.introspection", i.url);
    chain.push(new CachedIntrospection(cache, span));
  }
  return chain;
}
