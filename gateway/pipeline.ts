/**
 * The request path, in the order of SPEC §1, and the one place outcomes become responses:
 *
 *   accept → scope → normalise → route → classify → authenticate → rate-limit → scope check →
 *   proxy or respond → decorate headers → access log and metrics (on close)
 *
 * Failure branches: a malformed target (400) or no route (404) and every failed authentication
 * (400/401) are counted in the anonymous class by client IP; an unknown token is not introspected
 * once that budget is spent (429). An over-limit call gets 429 unless its class is in shadow mode.
 */
import { randomUUID } from "node:crypto";
import http, { type IncomingHttpHeaders, type OutgoingHttpHeaders } from "node:http";
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import { authenticateCached, hasScopes } from "./auth/authenticate.js";
import { identityOf, type TokenInfo } from "./auth/types.js";
import type { Clock } from "./clock.js";
import { ERROR_CATALOG, errorBody, type ErrorCode } from "./errors.js";
import { AccessLog } from "./observability/access-log.js";
import { HotMetrics } from "./observability/hot-metrics.js";
import type { GatewayMetrics, UpstreamErrorReason } from "./observability/metrics.js";
import { clientIp, setForwardedHeaders, stripHopByHop } from "./proxy/forwarded.js";
import type { ProxyHooks } from "./proxy/upstream-proxy.js";
import { rateLimitHeaders } from "./ratelimit/headers.js";
import type { Decision, LimitPolicy } from "./ratelimit/limiter.js";
import { normalizeTarget } from "./routing/normalize.js";
import type { Runtime } from "./runtime.js";
import { RequestScope, SCOPE, type ScopedRequest, type ScopedResponse } from "./scope.js";
import { statusBody } from "./status-endpoint.js";

/** Dependencies of the pipeline. */
export interface PipelineDeps {
  clock: Clock;
  metrics: GatewayMetrics;
  /** Also where access lines go (written by {@link AccessLog} to the same destination). */
  logger: Logger;
}

/** `Retry-After` (s) on a 503 the gateway produces. */
export const UNAVAILABLE_RETRY_AFTER_S = 5;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const CLIENT_AUTH_HEADERS = ["x-auth-subject", "x-auth-client-id", "x-auth-scope"] as const;
const JSON_TYPE = "application/json; charset=utf-8";

/** The request pipeline; also the proxy's hooks. */
export class Pipeline implements ProxyHooks {
  private runtime!: Runtime;
  private readonly clock: Clock;
  private readonly metrics: GatewayMetrics;
  private readonly logger: Logger;
  private readonly accessLog: AccessLog;
  private readonly hot: HotMetrics;
  /** Token lookups in flight per anonymous key (brute-force guard). */
  private readonly pendingLookups = new Map<string, number>();

  constructor({ clock, metrics, logger }: PipelineDeps) {
    this.clock = clock;
    this.metrics = metrics;
    this.logger = logger;
    this.accessLog = new AccessLog(logger);
    this.hot = new HotMetrics(metrics);
    this.handle = this.handle.bind(this);
    this.handleUpgrade = this.handleUpgrade.bind(this);
    this.finish = this.finish.bind(this);
  }

  /** Swaps the compiled configuration; requests already running keep the one they started with. */
  setRuntime(runtime: Runtime): void {
    this.runtime = runtime;
  }

  /** Hands buffered access lines to the log destination. */
  flushAccessLog(): void {
    this.accessLog.flush();
  }

  get current(): Runtime {
    return this.runtime;
  }

  /** `request` listener of the API server. */
  handle(req: ScopedRequest, res: ScopedResponse): void {
    const scope = this.open(req);
    res[SCOPE] = scope;
    res.on("close", onResponseClose); // emitted once; `on` skips once()'s wrapper
    this.run(this.runtime, req, res, scope, null, null).catch((err: unknown) => this.crash(err, res, scope));
  }

  /** `upgrade` listener: the handshake goes through the same steps; rejections are plain HTTP. */
  handleUpgrade(req: ScopedRequest, socket: Socket, head: Buffer): void {
    const scope = this.open(req);
    const res: ScopedResponse = new http.ServerResponse(req);
    res.assignSocket(socket);
    res.shouldKeepAlive = false;
    res[SCOPE] = scope;
    res.on("close", onResponseClose); // emitted once; `on` skips once()'s wrapper
    res.once("finish", () => socket.end());
    socket.on("error", ignoreSocketError);
    this.run(this.runtime, req, res, scope, socket, head).catch((err: unknown) =>
      this.crash(err, res, scope),
    );
  }

  private open(req: ScopedRequest): RequestScope {
    const id = req.headers["x-request-id"];
    const scope = new RequestScope(
      typeof id === "string" && REQUEST_ID.test(id) ? id : randomUUID(),
      req.method ?? "GET",
      performance.now(),
    );
    scope.finisher = this.finish;
    req[SCOPE] = scope;
    this.metrics.inflight.inc();
    return scope;
  }

  private async run(
    rt: Runtime,
    req: ScopedRequest,
    res: ScopedResponse,
    scope: RequestScope,
    socket: Socket | null,
    head: Buffer | null,
  ): Promise<void> {
    scope.clientIp = clientIp(req, rt.config.trust_proxy);
    const target = normalizeTarget(req.url ?? "");
    if (target === null) return this.rejectAnonymous(rt, res, scope, "bad_request");
    scope.path = target.matchPath;
    const statusPath = rt.config.rate_limits.status_path;
    const route = statusPath === target.matchPath ? null : rt.routes.match(target.matchPath);
    if (route === undefined) return this.rejectAnonymous(rt, res, scope, "not_found");
    scope.route = route;
    const policy = rt.policies.get(rt.classifier.classify(scope.method, target.matchPath))!;

    const info = await this.authenticate(rt, req, res, scope);
    if (info === null) return;
    // A token without sub/client_id is its own identity (by hash, never the token).
    scope.identity = identityOf(info) ?? `token:${scope.tokenHash.slice(0, 32)}`;
    // Counted once per authenticated call, whatever follows (429, 503, /rate_limit included).
    const scoped = route === null || hasScopes(info, route.scopes);
    this.hot.authResult(scoped ? "valid" : "insufficient_scope");
    if (route === null) return this.statusEndpoint(rt, res, scope, policy);

    const decision = await this.consume(rt, res, scope, policy, scope.identity);
    if (decision === null) return;
    if (!decision.allowed && policy.mode === "enforce") return this.respond(res, scope, "rate_limited");
    if (!scoped) return this.respond(res, scope, "auth_insufficient_scope");

    const proxy = rt.proxies.get(route.upstream)!;
    prepareUpstreamRequest(req, scope, info, rt, target.forwardPath, target.search, socket !== null);
    scope.upstreamStartMs = performance.now();
    if (socket !== null) {
      res.detachSocket(socket);
      this.finish(scope, 101);
      proxy.ws(req, socket, head!);
    } else {
      proxy.web(req, res);
    }
  }

  /** @returns the token's info, or null after answering (400/401/429/503). */
  private async authenticate(
    rt: Runtime,
    req: ScopedRequest,
    res: ScopedResponse,
    scope: RequestScope,
  ): Promise<TokenInfo | null> {
    const outcome = authenticateCached(req.headers.authorization, rt.tokenCache);
    switch (outcome.kind) {
      case "valid":
        scope.tokenHash = outcome.hash;
        return outcome.info;
      case "missing":
        this.hot.authResult("missing");
        return this.rejectAnonymous(rt, res, scope, "auth_required").then(nothing);
      case "malformed":
        this.hot.authResult("malformed");
        return this.rejectAnonymous(rt, res, scope, "auth_malformed").then(nothing);
      case "invalid":
        this.hot.authResult("invalid");
        return this.rejectAnonymous(rt, res, scope, "auth_invalid").then(nothing);
      case "miss":
        break;
    }
    // Brute-force guard: an IP whose anonymous budget is spent gets no introspection call. The peek
    // cannot see lookups still in flight (each may become a counted 401), so they are subtracted:
    // a concurrent flood of fresh tokens makes at most `remaining` introspection calls.
    // A token known to be active whose entry only went stale is re-validated without the guard.
    const ipKey = `ip:${scope.clientIp}`;
    const known = rt.tokenCache.knownActive(outcome.hash);
    const guard = known ? null : await this.decide(rt, scope, rt.anonymous, ipKey, false);
    const pending = this.pendingLookups.get(ipKey) ?? 0;
    if (guard !== null && (!guard.allowed || guard.remaining <= pending)) {
      this.hot.authResult("limited");
      this.useDecision(rt, scope, rt.anonymous, { ...guard, allowed: false, remaining: 0 });
      this.respond(res, scope, "rate_limited");
      return null;
    }
    this.pendingLookups.set(ipKey, pending + 1);
    try {
      const looked = await rt.tokenCache.fetch(outcome.token, outcome.hash);
      if (looked.status === "active") {
        scope.tokenHash = outcome.hash;
        return looked.info;
      }
      if (looked.status === "unavailable") {
        this.hot.authResult("unavailable");
        if (guard !== null) this.useDecision(rt, scope, rt.anonymous, guard);
        this.respond(res, scope, "auth_unavailable");
        return null;
      }
      this.hot.authResult("invalid");
      // Still pending until counted, so a concurrent peek never sees the budget without this call.
      return await this.rejectAnonymous(rt, res, scope, "auth_invalid").then(nothing);
    } finally {
      const left = this.pendingLookups.get(ipKey)! - 1;
      if (left === 0) this.pendingLookups.delete(ipKey);
      else this.pendingLookups.set(ipKey, left);
    }
  }

  /** Counts the call in the anonymous class by client IP, then answers `code` (or 429). */
  private async rejectAnonymous(
    rt: Runtime,
    res: ScopedResponse,
    scope: RequestScope,
    code: ErrorCode,
  ): Promise<void> {
    const decision = await this.consume(rt, res, scope, rt.anonymous, `ip:${scope.clientIp}`);
    if (decision === null) return;
    this.respond(res, scope, decision.allowed ? code : "rate_limited");
  }

  /** Consumes and records the decision; null after answering 503 (store down, failure_mode closed). */
  private async consume(
    rt: Runtime,
    res: ScopedResponse,
    scope: RequestScope,
    policy: LimitPolicy,
    key: string,
  ): Promise<Decision | null> {
    const decision = await this.decide(rt, scope, policy, key, true);
    if (decision === null) {
      scope.className = policy.name;
      scope.policy = policy;
      this.respond(res, scope, "ratelimit_unavailable");
      return null;
    }
    this.useDecision(rt, scope, policy, decision);
    const outcome = decision.degraded
      ? "degraded"
      : decision.allowed
        ? "allowed"
        : policy.mode === "shadow"
          ? "shadow_limited"
          : "limited";
    this.hot.decision(policy.name, outcome);
    return decision;
  }

  /** One limiter call; null when the store failed (it already counted and logged that). */
  private async decide(
    rt: Runtime,
    scope: RequestScope,
    policy: LimitPolicy,
    key: string,
    count: boolean,
  ): Promise<Decision | null> {
    try {
      const limiter = rt.limiter.limiter;
      return await (count ? limiter.consume(key, policy) : limiter.peek(key, policy));
    } catch (err) {
      this.logger.debug({ err, reqId: scope.requestId }, "limit store call failed");
      return null;
    }
  }

  private useDecision(rt: Runtime, scope: RequestScope, policy: LimitPolicy, decision: Decision): void {
    scope.className = policy.name;
    scope.policy = policy;
    scope.decision = decision;
    const ietf = policy === rt.anonymous ? rt.anonymousIetf : rt.ietfPolicies?.get(policy.name);
    scope.headers = rateLimitHeaders(decision, policy, ietf);
  }

  private async statusEndpoint(
    rt: Runtime,
    res: ScopedResponse,
    scope: RequestScope,
    policy: LimitPolicy,
  ): Promise<void> {
    const entries = [...rt.policies.values()];
    const decisions = await Promise.all(entries.map((p) => this.decide(rt, scope, p, scope.identity, false)));
    if (decisions.some((d) => d === null)) return this.respond(res, scope, "ratelimit_unavailable");
    const own = decisions[entries.indexOf(policy)]!;
    this.useDecision(rt, scope, policy, own);
    const body = statusBody(entries, decisions as Decision[]);
    res.setHeader("content-type", JSON_TYPE);
    res.setHeader("content-length", Buffer.byteLength(body));
    this.writeHead(res, scope, 200);
    res.end(body);
  }

  /** Writes a catalog error with the rate-limit headers (SPEC §2). */
  respond(res: ScopedResponse, scope: RequestScope, code: ErrorCode): void {
    if (res.headersSent || res.destroyed) return;
    scope.errorCode = code;
    const entry = ERROR_CATALOG[code];
    const realm = this.runtime.config.auth.realm;
    const h = scope.headers;
    let body: string;
    if (code === "rate_limited") {
      const n = h?.retryAfterS ?? 1;
      res.setHeader("retry-after", String(n));
      body = errorBody(code, n);
    } else {
      body = errorBody(code);
      if (entry.status === 503) res.setHeader("retry-after", String(UNAVAILABLE_RETRY_AFTER_S));
    }
    const challenge = challengeFor(code, realm, scope.route?.scopes);
    if (challenge !== null) res.setHeader("www-authenticate", challenge);
    res.setHeader("content-type", JSON_TYPE);
    res.setHeader("content-length", Buffer.byteLength(body));
    if (res.socket === null || res.shouldKeepAlive === false) res.setHeader("connection", "close");
    this.writeHead(res, scope, entry.status);
    res.end(body);
  }

  private writeHead(res: ScopedResponse, scope: RequestScope, status: number): void {
    const headers: OutgoingHttpHeaders = {};
    this.decorate(headers as IncomingHttpHeaders, scope);
    for (const k in headers) res.setHeader(k, headers[k]!);
    res.statusCode = status;
  }

  /** Sets `X-Request-Id` and the rate-limit headers, overwriting any the upstream sent (SPEC §3). */
  decorate(headers: IncomingHttpHeaders, scope: RequestScope): void {
    headers["x-request-id"] = scope.requestId;
    const h = scope.headers;
    if (h === null) {
      // No decision (store down, failure_mode closed): report the class as exhausted for 1 s.
      const p = scope.policy ?? this.runtime.anonymous;
      headers["x-ratelimit-limit"] = String(p.windows[0]!.limit);
      headers["x-ratelimit-remaining"] = "0";
      headers["x-ratelimit-reset"] = String(Math.ceil(this.clock.nowMs() / 1000) + 1);
      headers["x-ratelimit-resource"] = p.name;
      return;
    }
    headers["x-ratelimit-limit"] = h.limit;
    headers["x-ratelimit-remaining"] = h.remaining;
    headers["x-ratelimit-reset"] = h.reset;
    headers["x-ratelimit-resource"] = h.resource;
    if (h.ietf !== undefined) {
      headers["ratelimit-policy"] = h.ietfPolicy;
      headers["ratelimit"] = h.ietf;
    }
  }

  upstreamResponseHead(
    headers: IncomingHttpHeaders,
    req: ScopedRequest,
    res: ScopedResponse,
    upstream: string,
  ): void {
    const scope = req[SCOPE];
    if (scope === undefined) return;
    scope.upstreamMs = performance.now() - scope.upstreamStartMs;
    this.hot.upstream(upstream, scope.upstreamMs / 1000);
    stripHopByHop(headers);
    // Node re-frames the body for the client (chunked, or close-delimited for HTTP/1.0).
    if (headers["transfer-encoding"] !== undefined) delete headers["transfer-encoding"];
    // The client's own Connection header was stripped before forwarding; answer by its connection.
    headers.connection = res.shouldKeepAlive ? "keep-alive" : "close";
    this.decorate(headers, scope);
  }

  upstreamError(req: ScopedRequest, res: ScopedResponse | Socket, reason: UpstreamErrorReason): void {
    const scope = req[SCOPE];
    const upstream = scope?.route?.upstream ?? "unknown";
    this.metrics.upstreamErrors.inc({ upstream, reason });
    if (scope === undefined) return;
    if (res instanceof http.ServerResponse && !res.headersSent) {
      this.respond(res, scope, reason === "timeout" ? "gateway_timeout" : "bad_gateway");
    } else {
      // A started response (or a WebSocket handshake): the client must see a broken stream, not a
      // short body.
      res.destroy();
    }
  }

  /** Access line and metrics, once per request, on `close` (or at a WebSocket handshake). */
  private finish(scope: RequestScope, status: number): void {
    if (scope.finished) return;
    scope.finished = true;
    this.metrics.inflight.dec();
    const durationMs = performance.now() - scope.startMs;
    const route = scope.route?.prefix ?? "none";
    const cls = scope.className || "none";
    this.hot.request(route, cls, status, durationMs / 1000);
    this.accessLog.write(scope, status, durationMs);
  }

  private crash(err: unknown, res: ScopedResponse, scope: RequestScope): void {
    this.logger.error({ err, reqId: scope.requestId }, "request pipeline failed");
    if (!res.headersSent) this.respond(res, scope, "bad_gateway");
    else res.destroy();
  }
}

function nothing(): null {
  return null;
}

function ignoreSocketError(): void {}

function onResponseClose(this: ScopedResponse): void {
  const scope = this[SCOPE];
  if (scope?.finisher) scope.finisher(scope, this.writableFinished ? this.statusCode : 499);
}

/** RFC 6750 §3 challenges. */
function challengeFor(code: ErrorCode, realm: string, scopes: readonly string[] | undefined): string | null {
  switch (code) {
    case "auth_required":
      return `Bearer realm="${realm}"`;
    case "auth_malformed":
      return `Bearer realm="${realm}", error="invalid_request"`;
    case "auth_invalid":
      return `Bearer realm="${realm}", error="invalid_token"`;
    case "auth_insufficient_scope":
      return `Bearer realm="${realm}", error="insufficient_scope", scope="${(scopes ?? []).join(" ")}"`;
    default:
      return null;
  }
}

/**
 * SPEC §5, §6: headers the upstream receives.
 * @param upgrade - the request came through the `upgrade` listener (keeps `Connection: Upgrade`)
 */
function prepareUpstreamRequest(
  req: ScopedRequest,
  scope: RequestScope,
  info: TokenInfo,
  rt: Runtime,
  forwardPath: string,
  search: string,
  upgrade: boolean,
): void {
  const h = req.headers;
  stripHopByHop(h, upgrade);
  // Node answered `Expect: 100-continue` itself; forwarded, http-proxy-3 would skip its proxyReq
  // step (no timeout, no timing) and undici refuses it.
  if (h.expect !== undefined) delete h.expect;
  for (const name of CLIENT_AUTH_HEADERS) if (h[name] !== undefined) delete h[name];
  if (info.sub !== undefined) h["x-auth-subject"] = info.sub;
  if (info.clientId !== undefined) h["x-auth-client-id"] = info.clientId;
  if (info.scope.length > 0) h["x-auth-scope"] = info.scope.join(" ");
  if (!rt.config.auth.forward_authorization) delete h.authorization;
  h["x-request-id"] = scope.requestId;
  setForwardedHeaders(req, rt.config.trust_proxy);
  const route = scope.route!;
  let path = forwardPath;
  if (route.stripPrefix) {
    const prefix = route.prefix;
    path = path.slice(prefix.endsWith("/") ? prefix.length - 1 : prefix.length) || "/";
  }
  req.url = path + search;
}
