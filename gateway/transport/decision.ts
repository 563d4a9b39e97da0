/**
 * The decision transport (SPEC §23): a request on the decision listener is a question about
 * another request, one the edge proxy (nginx `auth_request`, Traefik `forwardAuth`, Envoy
 * `ext_authz`) received and will forward itself. The described request goes through the same core
 * as a call on the API listener (route, class, authentication, plan, budget, guard), counted once,
 * and its outcome is answered instead of proxied:
 *
 * - "proxy to the upstream" becomes **200**, empty body, with the rate-limit fields the proxied
 *   answer must carry and the identity fields the upstream would have received;
 * - a refusal is the gateway's own answer (status, JSON body, fields) plus `X-Gateway-Status`;
 *   in nginx mode every refusal but 401 is answered 403, since `auth_request` accepts only 2xx,
 *   401 and 403, with the JSON body in `X-Gateway-Body` (it discards the subrequest's body).
 *
 * Which request is described, in this order: `X-Forwarded-Method` + `X-Forwarded-Uri` (Traefik),
 * `X-Original-Method` + `X-Original-URI` (nginx), else the decision request's own method and the
 * path below `decision.path` (Envoy's `path_prefix`). These fields are trusted: the listener must
 * be reachable by the edge proxy only.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { HeaderMap, RequestFacts } from "../base/request-facts.js";
import type { Outcome } from "../core/outcome.js";
import { addGatewayFields, errorResponse, type GatewayResponse } from "../core/responses.js";
import { SCOPE, type RequestScope } from "../core/scope.js";
import { onResponseClose, Writer, type Scoped, type WriterDeps } from "./writer.js";

/** The identity fields copied from the upstream request the core prepared (SPEC §5). */
const IDENTITY_FIELDS = ["x-auth-subject", "x-auth-client-id", "x-auth-scope"] as const;
/** The fields that describe the request, removed from the facts the core sees. */
const CONVENTION_FIELDS = ["x-forwarded-method", "x-forwarded-uri", "x-original-method", "x-original-uri"];
/** RFC 9110 §9.1: a method is a token. */
const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/;
const NGINX_QUERY = /(?:^|&)nginx=1(?:&|$)/;
const JSON_TYPE = "application/json; charset=utf-8";
const NOT_A_QUESTION = '{"error":{"code":404,"message":"Not found"}}';

/** The described request, and whether its refusals are answered in nginx mode. */
interface Question {
  method: string;
  target: string;
  nginx: boolean;
}

/** The `request` listener of the decision listener (plain HTTP/1.1). */
export class DecisionTransport extends Writer<ServerResponse> {
  constructor(deps: WriterDeps) {
    super(deps);
    this.onRequest = this.onRequest.bind(this);
  }

  /** `request` listener. */
  onRequest(req: Scoped<IncomingMessage>, res: Scoped<ServerResponse>): void {
    // Read per request: a reload's `decision.path` and `nginx_status` apply to the next question.
    const settings = this.d.runtime().request.decision;
    const question = settings === null ? null : questionOf(req, settings.path, settings.nginxStatus);
    if (question === null) {
      // Not on `decision.path`: the edge proxy is misconfigured; nothing is decided or counted.
      res.writeHead(404, { "content-type": JSON_TYPE, "content-length": NOT_A_QUESTION.length });
      res.end(NOT_A_QUESTION);
      return;
    }
    const protocol = req.httpVersion === "1.0" ? "1.0" : "1.1";
    const scope = this.open(req.headers["x-request-id"], question.method, protocol);
    scope.mode = "decision";
    req[SCOPE] = scope;
    res[SCOPE] = scope;
    res.on("close", onResponseClose);
    void this.answer(res, scope, this.factsOf(req, question), question.nginx);
  }

  protected send(res: ServerResponse, r: GatewayResponse): void {
    if (res.headersSent || res.destroyed) return;
    if (r.closesConnection || res.socket === null || !res.shouldKeepAlive) r.headers.connection = "close";
    res.writeHead(r.status, r.headers);
    res.end(r.body);
  }

  /** {@link Writer}: never called, nothing is proxied here. */
  writeHead(res: ServerResponse, status: number, _message: string, headers: HeaderMap): void {
    res.writeHead(status, headers);
  }

  private async answer(res: ServerResponse, scope: RequestScope, facts: RequestFacts, nginx: boolean) {
    const outcome = await this.decide(scope, facts);
    const now = this.d.clock.nowMs();
    if (outcome === null) return this.send(res, refused(errorResponse(scope, "bad_gateway", now), nginx));
    if (outcome.kind === "error")
      return this.send(res, refused(errorResponse(scope, outcome.code, now), nginx));
    this.send(res, allowed(scope, outcome, now));
  }

  /** The facts of the described request: the decision request's fields, the convention's removed. */
  private factsOf(req: IncomingMessage, question: Question): RequestFacts {
    const headers: HeaderMap = { ...req.headers };
    for (const name of CONVENTION_FIELDS) delete headers[name];
    return {
      method: question.method,
      target: question.target,
      headers,
      peerAddress: req.socket.remoteAddress ?? "",
      protocol: req.httpVersion === "1.0" ? "1.0" : "1.1",
      secure: false,
      clientCertSubject: null,
      upgrade: false,
      hostFields: req.headers.host === undefined ? 0 : 1,
    };
  }
}

/** The described request, or null when the decision request is not on `decision.path`. */
function questionOf(req: IncomingMessage, base: string, nginxStatus: boolean): Question | null {
  const url = req.url ?? "";
  const q = url.indexOf("?");
  const path = q === -1 ? url : url.slice(0, q);
  const below = base === "/" ? path : path.slice(base.length);
  if (base !== "/" && (!path.startsWith(base) || (below !== "" && below.charCodeAt(0) !== 47))) {
    return null;
  }
  const h = req.headers;
  const own = q === -1 ? "" : url.slice(q + 1);
  const nginx = nginxStatus || NGINX_QUERY.test(own);
  const traefik = h["x-forwarded-uri"];
  if (typeof traefik === "string")
    return { method: methodOf(h["x-forwarded-method"], req), target: traefik, nginx };
  const original = h["x-original-uri"];
  if (typeof original === "string")
    return { method: methodOf(h["x-original-method"], req), target: original, nginx };
  // Envoy: the path below `path`, with the query, is the described request's own.
  const rest = base === "/" ? url : url.slice(base.length);
  return {
    method: req.method ?? "GET",
    target: rest === "" || rest.charCodeAt(0) === 63 /* ? */ ? "/" + rest : rest,
    nginx: nginxStatus,
  };
}

/** The described method: the convention's field when it is a token, else the request's own. */
function methodOf(field: string | string[] | undefined, req: IncomingMessage): string {
  return typeof field === "string" && METHOD.test(field) ? field : (req.method ?? "GET");
}

/** "Proxy to the upstream" as a decision: 200, no body, the fields the proxied answer carries. */
function allowed(scope: RequestScope, outcome: Outcome, nowMs: number): GatewayResponse {
  const headers: Record<string, string> = { "content-length": "0" };
  addGatewayFields(headers, scope, nowMs);
  if (outcome.kind === "proxy") {
    for (const name of IDENTITY_FIELDS) {
      const v = outcome.headers[name];
      if (typeof v === "string") headers[name] = v;
    }
  }
  return { status: 200, headers, body: "", closesConnection: false };
}

/**
 * A refusal as a decision: the gateway's answer plus `X-Gateway-Status`; in nginx mode 401 stays,
 * every other status becomes 403, and the body travels in `X-Gateway-Body` too.
 */
function refused(r: GatewayResponse, nginx: boolean): GatewayResponse {
  r.headers["x-gateway-status"] = String(r.status);
  if (nginx) {
    r.headers["x-gateway-body"] = r.body;
    if (r.status !== 401) r.status = 403;
  }
  return r;
}
