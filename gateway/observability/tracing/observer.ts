/**
 * The SERVER span as a finish observer (STYLE "observers at the end"): at a request's end it names
 * the span `<METHOD> <route prefix>`, sets the OpenTelemetry HTTP server attributes
 * (https://opentelemetry.io/docs/specs/semconv/http/http-spans/#http-server-semantic-conventions)
 * and the gateway's `gateway.ratelimit.*` ones (SPEC §13), and ends it. Every value is one the
 * access line shows too: the normalised path without its query, never a header, token or secret.
 */
import { SpanStatusCode } from "@opentelemetry/api";
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_URL_PATH,
} from "@opentelemetry/semantic-conventions";
import type { FinishObserver, FinishedRequest } from "../finished-request.js";
import { spanMethod } from "./request-trace.js";

/** `gateway.ratelimit.plan` of a call without a plan (SPEC §10 plans name theirs). */
const NO_PLAN = "none";

/** Ends each traced request's SERVER span (and a CLIENT span its upstream left open). */
export class TracingObserver implements FinishObserver {
  /** @param status - as the access line shows it: 499 when the client went away first */
  onFinish(scope: FinishedRequest): void {
    const status = scope.status;
    const t = scope.trace;
    if (t === null) return;
    // Normally ended at the upstream's response head or failure; left open only when the client
    // went away before either.
    t.upstreamFailed(status === 499 ? "aborted" : "unanswered");
    const span = t.server;
    if (span === null) return;
    const route = scope.route;
    if (route !== null) {
      span.updateName(`${spanMethod(scope.method)} ${route.prefix}`);
      span.setAttribute(ATTR_HTTP_ROUTE, route.prefix);
    }
    if (scope.path !== "") span.setAttribute(ATTR_URL_PATH, scope.path);
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
    if (scope.clientIp !== "") span.setAttribute(ATTR_CLIENT_ADDRESS, scope.clientIp);
    span.setAttribute(ATTR_NETWORK_PROTOCOL_VERSION, scope.protocol);
    if (scope.className !== "") {
      span.setAttribute("gateway.ratelimit.class", scope.className);
      span.setAttribute("gateway.ratelimit.plan", scope.policy?.plan ?? NO_PLAN);
    }
    const decision = scope.decision;
    if (decision !== null) {
      span.setAttribute(
        "gateway.ratelimit.decision",
        decision.degraded
          ? "degraded"
          : decision.allowed
            ? "allowed"
            : scope.policy?.mode === "shadow"
              ? "shadow_limited"
              : "limited",
      );
      span.setAttribute("gateway.ratelimit.remaining", decision.remaining);
    }
    if (scope.identity !== "") span.setAttribute("gateway.identity", scope.identity);
    if (scope.errorCode !== null) span.setAttribute("gateway.error.code", scope.errorCode);
    // Semantic conventions: a SERVER span is an error for 5xx only (4xx are the client's).
    if (status >= 500) {
      span.setAttribute(ATTR_ERROR_TYPE, String(status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end(scope.startMs + scope.durationMs);
  }
}
