/**
 * The request core, in the order of SPEC §1, transport-neutral: it turns a request's facts into an
 * outcome (plain data) and never writes a byte; the transport writers (`transport/`) do.
 *
 *   scope (by the transport) → normalise → route → classify → authenticate (the chain, and the
 *   anonymous-budget guard on a miss) → plan (prepared lookups, SPEC §10) → rate-limit → scope
 *   check → outcome: proxy, status or error → (transport) write, decorate headers → finish
 *   observers: metrics, access line
 *
 * Failure branches: a malformed target, a bad `Host` (400) or no route (404) and every failed
 * authentication (400/401) are counted in the anonymous class by client IP; an unknown token is
 * not resolved once that budget is spent (429). An over-limit call gets 429 unless its class is in
 * shadow mode. Requests the transport's parser refused (400/408/431) enter at {@link refuse}.
 */
import type { Logger } from "pino";
import { hasScopes } from "../auth/chain.js";
import { NetworkGuard } from "./network-guard.js";
import type { TokenInfo } from "../base/token-info.js";
import { Decisions } from "./decisions.js";
import type { ErrorCode } from "../base/error-catalog.js";
import type { Clock } from "../base/clock.js";
import type { RequestFacts } from "../base/request-facts.js";
import { HotMetrics } from "../observability/hot-metrics.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import { errorOutcome, PREFLIGHT, type Outcome } from "./outcome.js";
import { clientIp } from "../proxy/forwarded-headers.js";
import { hashKeyOf } from "../proxy/hash-key.js";
import { announcedTooLarge } from "../proxy/body-limit.js";
import { admit } from "../proxy/upstream-call.js";
import { prepareUpstreamRequest } from "./upstream-request.js";
import { budgetKeysOf } from "../ratelimit/budgets.js";
import { identityOf, ipKey } from "../ratelimit/identity.js";
import type { Decision } from "../ratelimit/limiter.js";
import type { PlanPolicies, ResolvedPolicy } from "../ratelimit/policy.js";
import { normalizeTarget } from "../routing/normalize.js";
import { LoopStall } from "../base/loop-stall.js";
import { ProxyStep } from "./proxy-step.js";
import type { RequestScope } from "./scope.js";
import { statusBody } from "./status-endpoint.js";

/** Dependencies of the core. */
export interface PipelineDeps {
  clock: Clock;
  metrics: GatewayMetrics;
  logger: Logger;
}

/** The request core of one gateway (its runtime comes with each request's scope). */
export class Pipeline {
  private readonly logger: Logger;
  /** Pre-bound metric children of the hot path (shared with the transport's observers). */
  readonly hot: HotMetrics;
  private readonly guard = new NetworkGuard();
  /** The proxy step: runs an exchange and maps its end to what is still to be written. */
  readonly proxy: ProxyStep;
  private readonly decisions: Decisions;
  private readonly loop: LoopStall;

  constructor({ clock, metrics, logger }: PipelineDeps) {
    this.logger = logger;
    this.hot = new HotMetrics(metrics);
    this.loop = new LoopStall(clock);
    this.proxy = new ProxyStep(clock, this.hot, this.loop);
    this.decisions = new Decisions(this.hot, logger);
  }

  /** Stops the core's timers (the gateway closes). */
  close(): void {
    this.loop.close();
  }

  /**
   * Decides one request. Never rejects.
   * @param facts - the request's facts; `facts.headers` becomes the upstream request's headers
   */
  async run(scope: RequestScope, facts: RequestFacts): Promise<Outcome> {
    const rt = scope.runtime;
    if (rt.tracing !== null)
      scope.trace = rt.tracing.begin(facts.headers, scope.method, scope.startMs, facts.secure);
    // SPEC §23: a decision describes a call the edge proxy received, whose address it appended to
    // X-Forwarded-For; its CORS, `/rate_limit` and admission (the upstream's calls in flight) are
    // the edge's, not the gateway's.
    const answerOnly = scope.mode === "decision";
    const hops = answerOnly ? rt.request.trustProxy + 1 : rt.request.trustProxy;
    scope.clientIp = clientIp(facts.peerAddress, facts.headers["x-forwarded-for"], hops);
    // RFC 9112 §3.2: exactly one Host on HTTP/1.1; never forwarded otherwise.
    if (facts.protocol === "1.1" && facts.hostFields !== 1) return this.rejectAnonymous(scope, "bad_host");
    const cors = answerOnly ? null : rt.cors;
    const origin = facts.headers.origin;
    if (cors !== null && typeof origin === "string") scope.corsAllowed = cors.allowOrigin(origin);
    const target = normalizeTarget(facts.target);
    if (target === null) return this.rejectAnonymous(scope, "bad_request");
    scope.path = target.matchPath;
    if (cors !== null && scope.method === "OPTIONS" && origin !== undefined) {
      if (facts.headers["access-control-request-method"] !== undefined) return this.preflight(scope);
    }
    const statusPath = answerOnly ? null : rt.request.statusPath;
    const route = statusPath === target.matchPath ? null : rt.routes.match(target.matchPath);
    if (route === undefined) return this.rejectAnonymous(scope, "not_found");
    scope.route = route;
    // SPEC §17: a body announced past the limit is refused from the head, never read.
    const bodyLimit = route === null ? rt.request.maxBodyBytes : route.maxBodyBytes;
    if (announcedTooLarge(bodyLimit, facts.headers["content-length"])) {
      return this.rejectAnonymous(scope, "payload_too_large");
    }
    const className = rt.classifier.classify(scope.method, target.matchPath);

    const info = await this.authenticate(scope, facts.headers.authorization as string | undefined);
    if (!isTokenInfo(info)) return info;
    // Resolved per request from the token's fields, so a reload's plans apply to cached tokens too.
    const choice = rt.policies.resolver.resolve(info);
    if (choice.claimUnknown) this.hot.planClaimUnknown();
    const plan = choice.plan;
    const classPolicy = plan.byClass.get(className)!;
    const identity = identityOf(info, classPolicy.identity, scope.tokenHash);
    // SPEC §21: an identity's override replaces its plan's windows (a map lookup, no round trip).
    const overrides = rt.limiter.usage.overrides;
    const policy = overrides.apply(classPolicy, identity.key, rt.clock, rt.policies.offsetMs);
    scope.identity = identity.value;
    scope.identityKey = identity.key;
    scope.budgets = budgetKeysOf(info, policy);
    // Counted once per authenticated call, whatever follows (429, 503, /rate_limit included).
    const scoped = route === null || hasScopes(info, route.scopes);
    this.hot.authResult(scoped ? "valid" : "insufficient_scope");
    if (route === null) return this.statusEndpoint(scope, policy, info, plan);

    const upstream = rt.upstreams.get(route.upstream)!;
    // SPEC §17 circuit breaking and §18 load shedding, before the limiter: a refused call costs no
    // budget.
    if (!answerOnly) {
      const call = admit(upstream, policy.plan, rt.shedding);
      if (call === null) {
        await this.decisions.peek(scope, policy, identity.key);
        return errorOutcome("upstream_overloaded");
      }
      scope.shed = call.shed;
      scope.call = call;
      // The client left while the call was authenticated: its scope's one end has passed.
      if (scope.finished) call.end();
    }
    const decision = await this.decisions.consume(scope, policy, identity.key);
    if (decision === null) return errorOutcome("ratelimit_unavailable");
    if (!decision.allowed && policy.mode === "enforce") return errorOutcome("rate_limited");
    if (!scoped) return errorOutcome("auth_insufficient_scope");

    const hashOn = upstream.hashOn;
    const hashKey =
      hashOn === null ? undefined : hashKeyOf(hashOn, identity.key, scope.clientIp, facts.headers);
    const path = prepareUpstreamRequest(
      facts,
      scope.requestId,
      info,
      route,
      target.forwardPath,
      target.search,
      rt.upstreamSettings,
    );
    return { kind: "proxy", upstream, path, headers: facts.headers, hashKey };
  }

  /**
   * A request the transport's parser refused (SPEC §3: 400 bad framing, 408, 431): counted in the
   * anonymous class by the socket address, answered with the parser's status even when that
   * budget is spent, since the connection closes anyway.
   * @param peerAddress - the socket's remote address, or "" when the socket no longer has one
   */
  async refuse(scope: RequestScope, code: ErrorCode, peerAddress: string): Promise<Outcome> {
    scope.clientIp = peerAddress === "" ? "unknown" : peerAddress;
    const tracing = scope.runtime.tracing;
    if (tracing !== null) scope.trace = tracing.begin(null, scope.method, scope.startMs, false);
    const decision = await this.decisions.consume(
      scope,
      scope.runtime.policies.anonymous,
      ipKey(scope.clientIp),
    );
    return errorOutcome(decision === null ? "ratelimit_unavailable" : code);
  }

  /** @returns the token's info, or the outcome of a failed authentication (400/401/429/503) */
  private async authenticate(scope: RequestScope, header: string | undefined): Promise<TokenInfo | Outcome> {
    const rt = scope.runtime;
    const outcome = rt.auth.authenticate(header);
    switch (outcome.kind) {
      case "valid":
        scope.tokenHash = outcome.hash;
        return outcome.info;
      case "missing":
        this.hot.authResult("missing");
        return this.rejectAnonymous(scope, "auth_required");
      case "malformed":
        this.hot.authResult("malformed");
        return this.rejectAnonymous(scope, "auth_malformed");
      case "invalid":
        this.hot.authResult("invalid");
        return this.rejectAnonymous(scope, "auth_invalid");
      case "miss":
        break;
    }
    const looked = await this.guard.resolve(
      outcome.authenticator,
      outcome.token,
      outcome.hash,
      scope.clientIp,
      rt.limiter.limiter,
      rt.policies,
      scope.trace,
    );
    switch (looked.status) {
      case "active":
        scope.tokenHash = outcome.hash;
        return looked.info;
      case "limited":
        this.hot.authResult("limited");
        this.decisions.use(scope, rt.policies.guard, looked.decision);
        return errorOutcome("rate_limited");
      case "unavailable":
        this.hot.authResult("unavailable");
        if (looked.decision !== null) this.decisions.use(scope, rt.policies.guard, looked.decision);
        return errorOutcome("auth_unavailable");
      case "inactive":
        this.hot.authResult("invalid");
        return this.answerAnonymous(scope, looked.decision, "auth_invalid");
    }
  }

  /** A CORS preflight: the IP's anonymous window read, not counted, for the headers (SPEC §14). */
  private async preflight(scope: RequestScope): Promise<Outcome> {
    await this.decisions.peek(scope, scope.runtime.policies.anonymous, ipKey(scope.clientIp));
    return PREFLIGHT;
  }

  /** Counts the call in the anonymous class by client IP, then answers `code` (or 429, or 503). */
  private async rejectAnonymous(scope: RequestScope, code: ErrorCode): Promise<Outcome> {
    const anonymous = scope.runtime.policies.anonymous;
    const decision = await this.decisions.consume(scope, anonymous, ipKey(scope.clientIp));
    return this.answerAnonymous(scope, decision, code, true);
  }

  private answerAnonymous(
    scope: RequestScope,
    decision: Decision | null,
    code: ErrorCode,
    recorded = false,
  ): Outcome {
    const anonymous = scope.runtime.policies.anonymous;
    if (decision === null) {
      if (!recorded) this.decisions.none(scope, anonymous);
      return errorOutcome("ratelimit_unavailable");
    }
    if (!recorded) this.decisions.record(scope, anonymous, decision);
    return errorOutcome(decision.allowed ? code : "rate_limited");
  }

  /** `GET /rate_limit` (SPEC §8, §10): every class of the caller's plan peeked, none counted. */
  private async statusEndpoint(
    scope: RequestScope,
    policy: ResolvedPolicy,
    info: TokenInfo,
    plan: PlanPolicies,
  ): Promise<Outcome> {
    const rt = scope.runtime;
    const limiter = rt.limiter.limiter;
    const overrides = rt.limiter.usage.overrides;
    const classes = [...plan.byClass.values()];
    const keys = classes.map((p) => identityOf(info, p.identity, scope.tokenHash).key);
    const entries = classes.map((p, i) => overrides.apply(p, keys[i]!, rt.clock, rt.policies.offsetMs));
    let decisions: Decision[];
    try {
      decisions = await Promise.all(
        entries.map((p, i) => limiter.peek(keys[i]!, p, scope.trace, budgetKeysOf(info, p))),
      );
    } catch (err) {
      this.logger.debug({ err, reqId: scope.requestId }, "limit store call failed");
      this.decisions.none(scope, policy);
      return errorOutcome("ratelimit_unavailable");
    }
    this.decisions.use(scope, policy, decisions[entries.indexOf(policy)]!);
    return { kind: "status", body: statusBody(entries, decisions, plan.name) };
  }
}

function isTokenInfo(v: TokenInfo | Outcome): v is TokenInfo {
  return (v as Outcome).kind === undefined;
}
