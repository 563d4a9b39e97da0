/**
 * The hand-built access line: valid JSON whatever the request put in it, the same fields and shape
 * pino writes for the same object, nothing below the logger's level, and whole lines per write.
 */
import { systemClock } from "../../gateway/base/clock.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AccessLog, type AccessLine } from "../../gateway/observability/access-log.js";
import { createLogger } from "../../gateway/observability/logger.js";
import type { RequestTrace } from "../../gateway/observability/tracing/request-trace.js";
import type { Decision } from "../../gateway/ratelimit/limiter.js";
import type { ResolvedPolicy } from "../../gateway/ratelimit/policy.js";
import type { Runtime } from "../../gateway/core/runtime.js";
import { Generation } from "../../gateway/core/generation.js";
import type { Route } from "../../gateway/routing/routes.js";
import { RequestScope } from "../../gateway/core/scope.js";
import { finishedScope } from "../helpers/access-lines.js";

/** A destination that keeps every write as it came. */
function sink(): { writes: string[]; write(chunk: string): void; lines(): Record<string, unknown>[] } {
  return {
    writes: [],
    write(chunk: string) {
      this.writes.push(chunk);
    },
    lines() {
      return this.writes
        .join("")
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    },
  };
}

interface Fields {
  reqId: string;
  method: string;
  path: string;
  route: string | null;
  cls: string;
  /** The caller's plan; undefined: no policy on the scope (no class charged). */
  plan: string | null | undefined;
  identity: string;
  clientIp: string;
  status: number;
  durationMs: number;
  upstreamMs: number;
  endpoint?: string | null;
  remaining: number | null;
  /** While tracing is on: the trace and SERVER span ids. */
  trace?: { traceId: string; spanId: string };
}

function scopeOf(f: Fields): RequestScope {
  const s = new RequestScope(
    f.reqId,
    f.method,
    "1.1",
    0,
    { generation: new Generation() } as unknown as Runtime,
    [],
  );
  s.path = f.path;
  s.route = f.route === null ? null : ({ prefix: f.route } as Route);
  s.className = f.cls;
  s.policy = f.plan === undefined ? null : ({ plan: f.plan } as ResolvedPolicy);
  s.identity = f.identity;
  s.clientIp = f.clientIp;
  s.upstreamMs = f.upstreamMs;
  s.endpoint =
    f.endpoint === undefined || f.endpoint === null
      ? null
      : { name: f.endpoint, json: JSON.stringify(f.endpoint) };
  s.decision = f.remaining === null ? null : ({ remaining: f.remaining } as Decision);
  if (f.trace !== undefined) s.trace = f.trace as RequestTrace;
  return s;
}

/** What the line must say for `f` (the pre-existing pino object, field for field), less `time`. */
function expected(f: Fields): Omit<AccessLine, "time"> {
  const round = (v: number) => Math.round(v * 1000) / 1000;
  const line: Omit<AccessLine, "time" | "msg"> = {
    level: "info",
    service: "gateway",
    reqId: f.reqId,
    method: f.method,
    path: f.path,
    route: f.route,
    class: f.cls === "" ? null : f.cls,
    plan: f.plan ?? null,
    status: f.status,
    durationMs: round(f.durationMs),
    upstreamMs: f.upstreamMs >= 0 ? round(f.upstreamMs) : null,
    endpoint: f.endpoint ?? null,
    attempts: null,
    identity: f.identity === "" ? null : f.identity,
    remaining: f.remaining,
    clientIp: f.clientIp,
    protocol: "1.1",
  };
  if (f.trace !== undefined) Object.assign(line, f.trace);
  if (f.status === 499) line.aborted = true;
  return { ...line, msg: "request" };
}

/** Asserts our line for `f` has pino's exact bytes (but the time); @returns our line */
function expectPinoBytes(f: Fields): string {
  const ours = sink();
  const theirs = sink();
  const { level: _l, service: _s, msg: _m, ...obj } = expected(f);
  createLogger("info", theirs).info(obj, "request");
  const log = new AccessLog(createLogger("info", ours), systemClock);
  log.onFinish(finishedScope(scopeOf(f), f.status, f.durationMs));
  log.flush();
  const strip = (s: string) => s.replace(/"time":"[^"]*"/, '"time":""');
  expect(strip(ours.writes.join(""))).toBe(strip(theirs.writes.join("")));
  return ours.writes.join("");
}

const fields: fc.Arbitrary<Fields> = fc.record({
  reqId: fc.string({ unit: "binary", maxLength: 40 }),
  method: fc.constantFrom("GET", "POST", "DELETE"),
  path: fc.string({ unit: "binary", maxLength: 60 }),
  route: fc.option(fc.string({ unit: "binary", maxLength: 10 })),
  cls: fc.string({ unit: "binary", maxLength: 10 }),
  plan: fc.oneof(fc.constant(undefined), fc.constant(null), fc.string({ unit: "binary", maxLength: 10 })),
  identity: fc.string({ unit: "binary", maxLength: 30 }),
  clientIp: fc.string({ unit: "binary", maxLength: 40 }),
  status: fc.constantFrom(200, 401, 429, 499, 502),
  durationMs: fc.double({ min: 0, max: 1e6, noNaN: true }),
  upstreamMs: fc.oneof(fc.constant(-1), fc.double({ min: 0, max: 1e6, noNaN: true })),
  endpoint: fc.option(fc.string({ unit: "binary", maxLength: 30 })),
  remaining: fc.option(fc.nat()),
  trace: fc.option(
    fc.record({
      traceId: fc.stringMatching(/^[0-9a-f]{32}$/),
      spanId: fc.stringMatching(/^[0-9a-f]{16}$/),
    }),
    { nil: undefined },
  ),
});

describe("AccessLog", () => {
  it("writes valid JSON with every field intact, whatever characters the request brought", () => {
    fc.assert(
      fc.property(fields, (f) => {
        const dest = sink();
        const log = new AccessLog(createLogger("info", dest), systemClock);
        log.onFinish(finishedScope(scopeOf(f), f.status, f.durationMs));
        log.flush();
        const [line, ...rest] = dest.lines();
        expect(rest).toEqual([]);
        const { time, ...others } = line!;
        expect(time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        expect(others).toEqual(expected(f));
      }),
      { numRuns: 300 },
    );
  });

  it("has exactly the keys, order and values pino writes for the same object", () => {
    const f: Fields = {
      reqId: "r-1",
      method: "GET",
      path: '/v1/"odd"\\path\u2028',
      route: "/v1",
      cls: "read",
      plan: "pro",
      identity: "sub:émile",
      clientIp: "10.0.0.1",
      status: 200,
      durationMs: 1.23456,
      upstreamMs: 0.5,
      endpoint: "10.0.0.2:3000",
      remaining: 7,
    };
    expectPinoBytes(f);
  });

  it('writes `"plan":null` exactly as pino does for a caller without a plan', () => {
    const f: Fields = { ...baseFields(), plan: null, cls: "anonymous", identity: "" };
    expect(expectPinoBytes(f)).toContain('"class":"anonymous","plan":null,"status":200');
  });

  it("has pino's exact bytes with the trace ids of tracing, placed after protocol", () => {
    const f: Fields = {
      ...baseFields(),
      trace: { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" },
    };
    expect(expectPinoBytes(f)).toContain(
      '"protocol":"1.1","traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","msg"',
    );
  });

  it("writes nothing when the logger's level is above info", () => {
    const dest = sink();
    const log = new AccessLog(createLogger("warn", dest), systemClock);
    log.onFinish(finishedScope(scopeOf({ ...baseFields(), status: 200 }), 200, 1));
    log.flush();
    expect(dest.writes).toEqual([]);
  });

  it("marks aborted calls and gateway answers", () => {
    const dest = sink();
    const log = new AccessLog(createLogger("info", dest), systemClock);
    const scope = scopeOf(baseFields());
    scope.errorCode = "rate_limited";
    log.onFinish(finishedScope(scope, 429, 2));
    log.onFinish(finishedScope(scopeOf(baseFields()), 499, 3));
    log.flush();
    const [limited, aborted] = dest.lines();
    expect(limited).toMatchObject({ status: 429, error: "rate_limited" });
    expect(limited).not.toHaveProperty("aborted");
    expect(aborted).toMatchObject({ status: 499, aborted: true });
  });

  it("hands lines over in whole-line chunks of about 16 KiB, and the rest on flush", () => {
    const dest = sink();
    const log = new AccessLog(createLogger("info", dest), systemClock);
    const scope = scopeOf(baseFields());
    for (let i = 0; i < 150; i++) log.onFinish(finishedScope(scope, 200, i));
    expect(dest.writes.length).toBeGreaterThan(0);
    for (const w of dest.writes) {
      expect(w.length).toBeGreaterThanOrEqual(16384);
      expect(w.endsWith("}\n")).toBe(true);
    }
    const before = dest.writes.length;
    log.flush();
    expect(dest.writes.length).toBe(before + 1);
    expect(dest.lines().map((l) => l.durationMs)).toEqual(Array.from({ length: 150 }, (_, i) => i));
  });
});

function baseFields(): Fields {
  return {
    reqId: "r",
    method: "GET",
    path: "/v1/user",
    route: "/v1",
    cls: "read",
    plan: null,
    identity: "sub:u",
    clientIp: "127.0.0.1",
    status: 200,
    durationMs: 1,
    upstreamMs: -1,
    remaining: 1,
  };
}
