/**
 * Everything the core needs for one configuration, built once (construction does the parsing and
 * allocation) and swapped atomically on reload; each request keeps the runtime it started on. The
 * limiter, the authenticators and the upstream clients survive a reload when their settings did
 * not change, so counts, cached tokens and pooled connections are not lost.
 */
import { AuthenticatorChain } from "../auth/chain.js";
import { authenticatorsOf } from "./authenticators.js";
import type { RuntimeDeps } from "./runtime-deps.js";
import type { Clock } from "../base/clock.js";
import { CorsPolicy } from "../cors/cors-policy.js";
import type { GatewayConfig } from "../config/schema.js";
import { tracingSettings } from "../observability/tracing/settings.js";
import { metricOutcomes } from "../observability/tracing/span-accounting.js";
import { Tracing } from "../observability/tracing/tracing.js";
import { endpointsOf, type UpstreamConfig } from "../config/upstream-schema.js";
import { connectionKey, type Endpoint } from "../proxy/endpoint.js";
import { Upstream } from "../proxy/upstream.js";
import { SheddingPolicy } from "../proxy/shedding-policy.js";
import type { UpstreamRequestSettings } from "./upstream-request.js";
import { Generation } from "./generation.js";
import { endpointAddress, type EndpointAddress } from "../proxy/endpoint-address.js";
import { createLimiter, type LimiterHandle } from "../ratelimit/create.js";
import { compilePolicies, type PolicySet } from "../ratelimit/policy.js";
import { Classifier } from "../routing/classify.js";
import { RouteTable } from "../routing/routes.js";
import { VERSION } from "../base/version.js";
import { budgetClaimsOf } from "../ratelimit/budgets.js";
import { readAdminTokenDigest } from "../config/admin-token.js";
import { DeliveryQueue } from "../ratelimit/notifications/delivery-queue.js";
import { ThresholdNotifier } from "../ratelimit/notifications/threshold-notifier.js";
import { loadWebhooks } from "../ratelimit/notifications/webhooks.js";

export type { RuntimeDeps } from "./runtime-deps.js";

/** What the request path reads of the configuration's top-level keys, prepared once per load. */
export interface RequestSettings {
  /** `trust_proxy`: `X-Forwarded-For` hops trusted for the client IP. */
  readonly trustProxy: number;
  /** `rate_limits.status_path`: the path answered with the caller's status, or null (none). */
  readonly statusPath: string | null;
  /** `listen.max_body_bytes`: the body limit of a request no route matched (bytes, 0 = none). */
  readonly maxBodyBytes: number;
  /** `auth.realm`, for `WWW-Authenticate` challenges. */
  readonly realm: string;
  /** `decision.path` and `decision.nginx_status` (SPEC §23), or null without a `decision` block. */
  readonly decision: { readonly path: string; readonly nginxStatus: boolean } | null;
}

/**
 * The compiled configuration: everything a request reads, prepared once per load; the request path
 * never reads {@link Runtime.config} (kept for reloads and `/upstreams`).
 */
export interface Runtime {
  readonly config: GatewayConfig;
  readonly request: RequestSettings;
  /** The gateway's clock (durations: `monotonicMs`). */
  readonly clock: Clock;
  /** Its calls in flight; a replaced configuration is released when the last one ends (SPEC §7). */
  readonly generation: Generation;
  readonly routes: RouteTable;
  readonly classifier: Classifier;
  /** Resolved policies per class, and the anonymous one. */
  readonly policies: PolicySet;
  /** The upstreams (their endpoints, balancers and health), by name. */
  readonly upstreams: ReadonlyMap<string, Upstream>;
  /** `load_shedding` (SPEC §18), read at each admission: a reload's applies once it commits. */
  readonly shedding: SheddingPolicy;
  /** What shapes the upstream request, from the configuration. */
  readonly upstreamSettings: UpstreamRequestSettings;
  readonly auth: AuthenticatorChain;
  readonly limiter: LimiterHandle;
  /** The compiled `cors` block, or null without one (OPTIONS is then an ordinary request). */
  readonly cors: CorsPolicy | null;
  /** Tracing (SPEC §13), or null when no endpoint is configured: then no request allocates a span. */
  readonly tracing: Tracing | null;
  /**
   * SHA-256 of the admin token read from `admin.token_file` (SPEC §21), or null without one (then
   * `/usage` and `/overrides` answer 404). Read at every load, so a reload picks up a new token.
   */
  readonly adminTokenDigest: Buffer | null;
  /**
   * Threshold notifications (SPEC §21), or null without `notifications`. Its delivery queue is
   * the previous configuration's when the bound is unchanged, so a reload loses no delivery.
   */
  readonly notifier: ThresholdNotifier | null;
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/**
 * Compiles a configuration. Pass the previous runtime to keep its limiter, authenticators and
 * upstreams (their connections, outlier and health state) when their settings are unchanged.
 * @throws Error when a file the configuration names (tokens, upstream TLS) cannot be loaded
 */
export function buildRuntime(config: GatewayConfig, deps: RuntimeDeps, previous?: Runtime): Runtime {
  // A static file is re-read on every reload (its content may have changed). Cached tokens hold
  // the plan claim's member, not a plan: only renaming `plan_claim` needs them introspected again;
  // new plans and consumers apply to them at once (the plan is resolved per request).
  const keepAuth =
    previous !== undefined &&
    same(previous.config.auth, config.auth) &&
    previous.config.rate_limits.plan_claim === config.rate_limits.plan_claim &&
    same(budgetClaimsOf(previous.config), budgetClaimsOf(config)) &&
    config.auth.static === undefined;
  const keepLimiter =
    previous !== undefined &&
    same(previous.config.rate_limits.store, config.rate_limits.store) &&
    same(previous.config.rate_limits.memory, config.rate_limits.memory) &&
    previous.config.rate_limits.failure_mode === config.rate_limits.failure_mode &&
    previous.config.rate_limits.expected_replicas === config.rate_limits.expected_replicas;
  // Files first (they may throw), then what holds sockets, so a bad file leaks nothing. TLS files
  // are re-read on every reload: a rotated CA or client certificate makes new connections.
  const addresses = new Map<string, EndpointAddress[]>();
  for (const [name, u] of Object.entries(config.upstreams)) {
    addresses.set(
      name,
      endpointsOf(u).map((e) => endpointAddress(name, u, e.url, deps.baseDir)),
    );
  }
  const adminTokenDigest = readAdminTokenDigest(config, deps.baseDir);
  // Webhook secrets are re-read on every reload (SPEC §21).
  const webhooks = loadWebhooks(config, deps.baseDir);
  const auth = keepAuth
    ? previous.auth
    : new AuthenticatorChain(authenticatorsOf(config, deps), config.auth.schemes);
  const traceSettings = tracingSettings(config.tracing, process.env);
  const kept = previous?.tracing ?? null;
  const upstreams = new Map<string, Upstream>();
  const upstreamDeps = { metrics: deps.metrics, logger: deps.logger, clock: deps.clock };
  for (const [name, u] of Object.entries(config.upstreams)) {
    const before = previous?.upstreams.get(name);
    const keep =
      before !== undefined &&
      keepsUpstream(previous!.config.upstreams[name]!, u, before, addresses.get(name)!);
    upstreams.set(name, keep ? before : new Upstream(name, u, addresses.get(name)!, upstreamDeps, before));
  }
  const limiter = keepLimiter ? previous.limiter : createLimiter(config, deps);
  // A memory store's overrides live only in this process (SPEC §21): a new store keeps them.
  if (previous !== undefined && limiter !== previous.limiter)
    limiter.usage.overrides.replace(previous.limiter.usage.overrides.list(deps.clock.nowMs()));
  // The first configuration is live at once; a reload's, when it commits (activateRuntime).
  if (previous === undefined) activateRuntime({ config, upstreams, limiter, adminTokenDigest });
  return {
    config,
    request: Object.freeze({
      trustProxy: config.trust_proxy,
      statusPath: config.rate_limits.status_path,
      maxBodyBytes: config.listen.max_body_bytes,
      realm: config.auth.realm,
      decision:
        config.decision === undefined
          ? null
          : Object.freeze({ path: config.decision.path, nginxStatus: config.decision.nginx_status }),
    }),
    clock: deps.clock,
    generation: new Generation(),
    routes: new RouteTable(config),
    classifier: new Classifier(config),
    policies: compilePolicies(config),
    upstreams,
    shedding: new SheddingPolicy(config.load_shedding),
    upstreamSettings: {
      forwardAuthorization: config.auth.forward_authorization,
      trustProxy: config.trust_proxy,
    },
    auth,
    limiter,
    cors: config.cors === undefined ? null : new CorsPolicy(config.cors, config.headers.ietf),
    tracing:
      traceSettings === null
        ? null
        : kept !== null && same(kept.settings, traceSettings)
          ? kept
          : new Tracing(traceSettings, metricOutcomes(deps.metrics), VERSION),
    adminTokenDigest,
    notifier: notifierOf(config, webhooks, deps, previous?.notifier ?? null),
  };
}

/** The notifier of `config`, on the previous one's queue when its bound did not change. */
function notifierOf(
  config: GatewayConfig,
  webhooks: ReturnType<typeof loadWebhooks>,
  deps: RuntimeDeps,
  previous: ThresholdNotifier | null,
): ThresholdNotifier | null {
  const n = config.notifications;
  if (n === undefined) return null;
  const queue =
    previous !== null && previous.queue.capacity === n.queue_size
      ? previous.queue
      : new DeliveryQueue({
          capacity: n.queue_size,
          count: (result) => deps.metrics.webhookDeliveries.inc({ result }),
          logger: deps.logger,
          clock: deps.clock,
        });
  return new ThresholdNotifier(webhooks, queue);
}

/**
 * An upstream a reload keeps whole, as the same object (SPEC §7): the same endpoints, balancing and
 * outlier settings, and every endpoint's connections made the same way (TLS material included).
 * Everything else it reads per call, set by {@link activateRuntime} when the reload commits.
 */
function keepsUpstream(
  before: UpstreamConfig,
  next: UpstreamConfig,
  upstream: Upstream,
  addresses: readonly EndpointAddress[],
): boolean {
  const shape = (u: UpstreamConfig) => [endpointsOf(u), u.balancer, u.hash_on, u.outlier_detection];
  if (!same(shape(before), shape(next))) return false;
  return upstream.endpoints.every((e, i) => e.connectionKey === connectionKey(addresses[i]!, next));
}

/**
 * Makes a built configuration the one in force: applies the settings its upstreams read per call
 * (timeouts, limits, retry budget; `load_shedding` is the runtime's own, read at admission), and
 * turns usage operations (SPEC §21) on or off with `admin.token_file`. Called once per
 * configuration, when it commits, never while it is only prepared (a cluster reload that aborts
 * changes nothing live).
 */
export function activateRuntime(
  rt: Pick<Runtime, "config" | "upstreams" | "limiter" | "adminTokenDigest">,
): void {
  for (const [name, u] of rt.upstreams) u.apply(rt.config.upstreams[name]!);
  rt.limiter.usage.enable(rt.adminTokenDigest !== null);
}

/**
 * Releases what no configuration in `live` uses of `old`: endpoint connections, limiter,
 * authenticators, tracing. Call it once the calls started on `old` have finished (its
 * {@link Generation} is idle); pass no `live` at shutdown.
 */
export async function releaseRuntime(old: Runtime, live: readonly Runtime[] = []): Promise<void> {
  const inUse = new Set<Endpoint>();
  for (const rt of live) for (const u of rt.upstreams.values()) for (const e of u.endpoints) inUse.add(e);
  for (const u of old.upstreams.values()) for (const e of u.endpoints) if (!inUse.has(e)) e.close();
  if (!live.some((rt) => rt.auth === old.auth)) await old.auth.close();
  if (!live.some((rt) => rt.limiter === old.limiter)) {
    old.limiter.usage.close();
    await old.limiter.limiter.close();
  }
  // A replaced queue finishes what it holds (its timers do not keep the process up); at shutdown
  // (no `live`) what is still held is lost.
  if (old.notifier !== null && live.length === 0) await old.notifier.queue.close();
  // Flushes the spans still queued (bounded: a dead collector does not hold the shutdown).
  if (old.tracing !== null && !live.some((rt) => rt.tracing === old.tracing)) await old.tracing.shutdown();
}
