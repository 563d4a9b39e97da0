/**
 * README "How a request flows" against the code: every code of the error catalogue is named in a
 * numbered step, and for every two consecutive steps that can refuse a call, a real call that fails
 * both gets the earlier step's refusal (read from its access line's `error`). A real gateway on the
 * memory store, real upstreams on ephemeral ports (one that holds its calls, one that refuses
 * connections), the static tokens file (`valid-token`: scopes read write; `reader-token`: read).
 */
import type { ServerResponse, Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERROR_CATALOG } from "../../gateway/base/error-catalog.js";
import { createLogger } from "../../gateway/observability/logger.js";
import { startGateway, testConfig, TOKENS_FILE, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, rawRequest, request } from "../helpers/http.js";
import { logLines, type LogLine } from "../helpers/log-lines.js";
import { ROOT, sectionOf } from "../helpers/manual.js";
import { freePort } from "../helpers/redis-server.js";
import { readFileSync } from "node:fs";
import path from "node:path";

/** A numbered step of the flow: its number, its bold name and the catalogue codes it names. */
interface Step {
  n: number;
  name: string;
  codes: string[];
}

function flowSteps(): Step[] {
  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
  const section = sectionOf(readme, "How a request flows")!.join("\n");
  const steps: Step[] = [];
  for (const m of section.matchAll(/^(\d+)\. \*\*([^*]+)\*\*([\s\S]*?)(?=^\d+\. \*\*|^\S|(?![\s\S]))/gm)) {
    const codes = [...m[3]!.matchAll(/`([a-z_]+)`/g)].map((c) => c[1]!).filter((c) => c in ERROR_CATALOG);
    steps.push({ n: Number(m[1]), name: m[2]!, codes });
  }
  return steps;
}

/** One call failing at two steps; `earlier` must win. */
interface Case {
  earlier: { step: string; code: string };
  later: { step: string; code: string };
  /** Makes the call; resolves to the code on its access line. */
  call: () => Promise<string>;
}

const held: ServerResponse[] = [];
let upstream: { server: Server; url: string };
let holding: { server: Server; url: string };
let gw: TestGateway;
const log = logLines();
let seq = 0;

beforeAll(async () => {
  upstream = await listen((_req, res) => res.end("ok"));
  holding = await listen((_req, res) => void held.push(res));
  gw = await startGateway(
    testConfig(upstream.url, {
      upstreams: {
        docs: { url: upstream.url, timeout_ms: 2000 },
        held: { url: holding.url, timeout_ms: 10_000, max_in_flight: 1 },
        dead: { url: `http://127.0.0.1:${await freePort()}`, timeout_ms: 1000 },
      },
      routes: [
        { prefix: "/v1/held", upstream: "held" },
        { prefix: "/v1/admin", upstream: "docs", scopes: ["admin"] },
        { prefix: "/v1/dead-admin", upstream: "dead", scopes: ["admin"] },
        { prefix: "/v1", upstream: "docs", max_body_bytes: 1000 },
      ],
      auth: {
        realm: "api",
        static: { tokens_file: TOKENS_FILE },
        guard: { windows: [{ limit: 1, window_s: 3600 }] },
      },
      rate_limits: {
        classes: {
          tight: { match: { paths: ["/v1/held", "/v1/admin"] }, windows: [{ limit: 1, window_s: 3600 }] },
          read: { windows: [{ limit: 100, window_s: 3600 }] },
        },
        anonymous: { windows: [{ limit: 100, window_s: 3600 }] },
      },
      log: { level: "info" },
    }),
    { logger: createLogger("info", log.destination) },
  );
  // Cached before the guard is spent (an uncached token from a spent IP is never resolved).
  for (const token of ["valid-token", "reader-token"]) await call("GET", "/v1/items", token);
});

afterAll(async () => {
  for (const res of held) res.end("late");
  await gw?.close();
  await closeServer(upstream.server);
  await closeServer(holding.server);
});

/** The `error` of the access line of the request sent with `reqId`. */
async function errorOf(reqId: string): Promise<string> {
  gw.gateway.flushAccessLog();
  const line: LogLine = await log.waitFor((l) => l.msg === "request" && l.reqId === reqId);
  if (process.env.FLOW_DEBUG) console.log(line);
  return String(line.error);
}

/** A call through node:http with its own request id; resolves to its access line's error. */
async function call(method: string, p: string, token: string | null, body?: string): Promise<string> {
  const reqId = `flow-${++seq}`;
  const headers: Record<string, string> = { "x-request-id": reqId };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  await request(`${gw.url}${p}`, { method, headers, body });
  return errorOf(reqId);
}

/** Raw bytes (for heads node:http would not send); resolves to the access line's error. */
async function raw(head: string, reqId: string | null): Promise<string> {
  await rawRequest(gw.apiPort, head);
  if (reqId !== null) return errorOf(reqId);
  gw.gateway.flushAccessLog();
  const line = await log.waitFor(
    (l) =>
      l.msg === "request" &&
      l.status === 400 &&
      l.reqId !== undefined &&
      !String(l.reqId).startsWith("flow-"),
  );
  return String(line.error);
}

/** Holds one admitted call on `held` (spending valid-token's `tight` budget), so the upstream is full. */
async function fillHeldUpstream(): Promise<void> {
  const reqId = `flow-${++seq}`;
  void request(`${gw.url}/v1/held`, {
    headers: { "x-request-id": reqId, authorization: "Bearer valid-token" },
  });
  while (held.length === 0) await new Promise((r) => holding.server.once("request", r));
}

const CASES: Case[] = [
  {
    earlier: { step: "parse", code: "bad_framing" },
    later: { step: "accept", code: "bad_host" },
    call: () => raw("GET /v1/x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", null),
  },
  {
    earlier: { step: "accept", code: "bad_host" },
    later: { step: "normalise", code: "bad_request" },
    call: () => raw("GET /v1/%zz HTTP/1.1\r\nX-Request-Id: flow-host\r\n\r\n", "flow-host"),
  },
  {
    earlier: { step: "normalise", code: "bad_request" },
    later: { step: "route", code: "not_found" },
    call: () => call("GET", "/elsewhere/%zz", "valid-token"),
  },
  {
    earlier: { step: "route", code: "not_found" },
    later: { step: "body limit", code: "payload_too_large" },
    call: () => call("POST", "/elsewhere", "valid-token", "x".repeat(5000)),
  },
  {
    earlier: { step: "body limit", code: "payload_too_large" },
    later: { step: "authenticate", code: "auth_required" },
    call: () => call("POST", "/v1/items", null, "x".repeat(5000)),
  },
  {
    // The guard is checked before an uncached token is resolved: its first unknown token spends it.
    earlier: { step: "authenticate", code: "auth_invalid" },
    later: { step: "plan and admission", code: "upstream_overloaded" },
    call: async () => {
      await fillHeldUpstream();
      return call("GET", "/v1/held", "invented-token-1");
    },
  },
  {
    earlier: { step: "authenticate", code: "rate_limited" },
    later: { step: "authenticate", code: "auth_invalid" },
    call: () => call("GET", "/v1/items", "invented-token-2"),
  },
  {
    // valid-token's `tight` window was spent by the held call, and the upstream is full.
    earlier: { step: "plan and admission", code: "upstream_overloaded" },
    later: { step: "rate-limit", code: "rate_limited" },
    call: () => call("GET", "/v1/held", "valid-token"),
  },
  {
    earlier: { step: "rate-limit", code: "rate_limited" },
    later: { step: "scope check", code: "auth_insufficient_scope" },
    call: async () => {
      expect(await call("GET", "/v1/admin", "reader-token")).toBe("auth_insufficient_scope");
      return call("GET", "/v1/admin", "reader-token");
    },
  },
  {
    earlier: { step: "scope check", code: "auth_insufficient_scope" },
    later: { step: "proxy", code: "bad_gateway" },
    call: () => call("GET", "/v1/dead-admin", "valid-token"),
  },
];

describe("README's How a request flows", () => {
  const steps = flowSteps();
  const stepNamed = (name: string): Step => {
    const s = steps.find((x) => x.name === name);
    if (s === undefined) throw new Error(`no step named ${name}`);
    return s;
  };

  it("numbers its steps in order and names every code of the catalogue", () => {
    expect(steps.map((s) => s.n)).toEqual(steps.map((_, i) => i));
    expect(new Set(steps.flatMap((s) => s.codes))).toEqual(new Set(Object.keys(ERROR_CATALOG)));
  });

  it("has a call failing both of every two consecutive refusing steps", () => {
    const refusing = steps.filter((s) => s.codes.length > 0).map((s) => s.name);
    const covered = new Set(CASES.map((c) => `${c.earlier.step} > ${c.later.step}`));
    for (let i = 1; i < refusing.length; i++) {
      expect(covered, `${refusing[i - 1]} > ${refusing[i]}`).toContain(`${refusing[i - 1]} > ${refusing[i]}`);
    }
  });

  it.each(
    CASES.map((c) => [`${c.earlier.code} (${c.earlier.step}) before ${c.later.code} (${c.later.step})`, c]),
  )("%s", async (_name, c) => {
    const earlier = stepNamed(c.earlier.step);
    const later = stepNamed(c.later.step);
    expect(earlier.codes).toContain(c.earlier.code);
    expect(later.codes).toContain(c.later.code);
    if (earlier === later) {
      expect(earlier.codes.indexOf(c.earlier.code)).toBeLessThan(earlier.codes.indexOf(c.later.code));
    } else {
      expect(earlier.n).toBeLessThan(later.n);
    }
    expect(await c.call()).toBe(c.earlier.code);
  });
});
