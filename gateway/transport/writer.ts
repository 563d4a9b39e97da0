/**
 * What every transport writer shares: it opens a request's scope, hands the request's facts to the
 * core (`core/pipeline.ts`), and writes the outcome: a gateway response, or the head of a proxied
 * exchange (the core's proxy step runs it) and whatever the core makes of its end. Subclasses
 * (`http1.ts`, `http2.ts`) are the only code that knows their `node:` server objects; they add what
 * their protocol needs (HTTP/1.1: `Connection`, upgrades, parser refusals; HTTP/2: pseudo-headers,
 * no connection-specific fields).
 */
import type { Logger } from "pino";
import type { Clock } from "../base/clock.js";
import type { ClientProtocol, HeaderMap, RequestFacts } from "../base/request-facts.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import type { Outcome } from "../core/outcome.js";
import type { Pipeline } from "../core/pipeline.js";
import type { HeadWriter } from "../proxy/exchange-types.js";
import type { ProxyRequest, ResponseTarget } from "../proxy/client-io.js";
import { CUT } from "../core/proxy-step.js";
import { errorResponse, jsonResponse, preflightResponse, type GatewayResponse } from "../core/responses.js";
import type { Runtime } from "../core/runtime.js";
import { RequestScope, SCOPE } from "../core/scope.js";
import type { FinishObserver } from "../observability/finished-request.js";
import { newRequestId } from "./request-id.js";

/** A transport's object carrying the request's scope. */
export type Scoped<T> = T & { [SCOPE]?: RequestScope };

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Dependencies of a writer. */
export interface WriterDeps {
  pipeline: Pipeline;
  clock: Clock;
  metrics: GatewayMetrics;
  logger: Logger;
  /** Told of every request's end, in order (metrics, access line, ...). */
  observers: readonly FinishObserver[];
  /** The runtime new requests start on. */
  runtime: () => Runtime;
}

/** The shared part of the transport writers. */
export abstract class Writer<Res extends ResponseTarget> implements HeadWriter<Res> {
  protected readonly d: WriterDeps;

  constructor(deps: WriterDeps) {
    this.d = deps;
  }

  /** Writes a gateway response on `res` (status, fields, body) as the protocol wants. */
  protected abstract send(res: Res, r: GatewayResponse): void;

  /**
   * {@link HeadWriter}: writes the upstream's head on `res`; `headers` already carry the gateway's
   * fields.
   */
  abstract writeHead(res: Res, status: number, message: string, headers: HeaderMap): void;

  /** A new request's scope, on the runtime new requests start on. */
  protected open(
    id: string | string[] | undefined,
    method: string | undefined,
    protocol: ClientProtocol,
  ): RequestScope {
    const scope = new RequestScope(
      typeof id === "string" && REQUEST_ID.test(id) ? id : newRequestId(),
      method ?? "GET",
      protocol,
      this.d.clock.monotonicMs(),
      this.d.runtime(),
      this.d.observers,
    );
    this.d.metrics.inflightNow.value++;
    return scope;
  }

  /** Runs the core and writes its outcome on `res`. */
  protected async serve(
    req: ProxyRequest,
    res: Res,
    scope: RequestScope,
    facts: RequestFacts,
    hasBody: boolean,
  ): Promise<void> {
    const outcome = await this.decide(scope, facts);
    const now = this.d.clock.nowMs();
    if (outcome === null) return this.send(res, errorResponse(scope, "bad_gateway", now));
    switch (outcome.kind) {
      case "error":
        return this.send(res, errorResponse(scope, outcome.code, now));
      case "status":
        return this.send(res, jsonResponse(scope, outcome.body, now));
      case "preflight":
        return this.send(res, preflightResponse(scope, now));
      case "proxy": {
        const proxy = this.d.pipeline.proxy;
        const answer = proxy.answer(await proxy.plain(scope, outcome, req, hasBody, res, this));
        if (answer === CUT) res.destroy();
        else if (answer !== null) this.send(res, answer);
      }
    }
  }

  /** The core's outcome, or null when it failed unexpectedly (logged; answered 502). */
  protected async decide(scope: RequestScope, facts: RequestFacts): Promise<Outcome | null> {
    try {
      return await this.d.pipeline.run(scope, facts);
    } catch (err) {
      this.d.logger.error({ err, reqId: scope.requestId }, "request pipeline failed");
      return null;
    }
  }
}

/** `close` listener of a response: the observers are told, with 499 when the client went first. */
export function onResponseClose(this: Scoped<ResponseTarget & { statusCode: number }>): void {
  const scope = this[SCOPE];
  scope?.finish(this.writableFinished ? this.statusCode : 499);
}
