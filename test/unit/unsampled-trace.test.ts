/**
 * The unsampled fast path writes the W3C `traceparent` itself: it must be the bytes the
 * SDK's `W3CTraceContextPropagator` writes for a non-recording child span with the same ids.
 */
import { ROOT_CONTEXT, TraceFlags, defaultTextMapSetter, trace } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { RandomIdGenerator } from "@opentelemetry/sdk-trace-base";
import { describe, expect, it } from "vitest";
import type { HeaderMap } from "../../gateway/base/request-facts.js";
import { UnsampledTrace } from "../../gateway/observability/tracing/unsampled-trace.js";

/** Hands out `ids` in order (the CLIENT span id is the second span id asked for). */
function scripted(spanIds: string[]) {
  const random = new RandomIdGenerator();
  return { generateTraceId: () => random.generateTraceId(), generateSpanId: () => spanIds.shift()! };
}

describe("UnsampledTrace", () => {
  it("writes the traceparent the SDK's propagator writes for the same non-recording span", () => {
    const random = new RandomIdGenerator();
    for (let i = 0; i < 50; i++) {
      const traceId = random.generateTraceId();
      const serverId = random.generateSpanId();
      const clientId = random.generateSpanId();
      const t = new UnsampledTrace(scripted([serverId, clientId]), traceId, undefined);
      expect(t).toMatchObject({ traceId, spanId: serverId, server: null });
      const mine: HeaderMap = { tracestate: "client=stale" };
      t.startUpstream("GET", "127.0.0.1", 80, mine);
      const sdk: Record<string, string> = {};
      const span = trace.wrapSpanContext({ traceId, spanId: clientId, traceFlags: TraceFlags.NONE });
      new W3CTraceContextPropagator().inject(trace.setSpan(ROOT_CONTEXT, span), sdk, defaultTextMapSetter);
      expect(mine).toEqual(sdk);
    }
  });

  it("keeps a continued trace's tracestate and records no child span", () => {
    const t = new UnsampledTrace(new RandomIdGenerator(), "4bf92f3577b34da6a3ce929d0e0e4736", "vendor=1");
    const headers: HeaderMap = {};
    t.startUpstream("GET", "127.0.0.1", 80, headers);
    expect(headers.tracestate).toBe("vendor=1");
    expect(t.child()).toBeNull();
  });
});
