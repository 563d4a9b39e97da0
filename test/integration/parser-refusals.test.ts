/**
 * SPEC §3 "every response", including the ones Node's HTTP parser refuses: a bad
 * framing (400), a head too large (431), a head too slow (408), a missing or repeated `Host` (400,
 * RFC 9112 §3.2) each carry the rate-limit fields of the IP's anonymous window,
 * `X-RateLimit-Resource: anonymous`, an `X-Request-Id` and the catalogue body; each gets an access
 * line and a `gateway_requests_total` sample; none reaches the upstream; the connection closes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../gateway/observability/logger.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, rawRequest } from "../helpers/http.js";
import { logLines, type LogLines } from "../helpers/log-lines.js";
import { scrape } from "../helpers/prom.js";

const TOKEN = "Authorization: Bearer valid-token\r\n";
const ANON_LIMIT = 50;
let upstream: Awaited<ReturnType<typeof listen>>;
let upstreamRequests = 0;
let gw: TestGateway;
let log: LogLines;

beforeAll(async () => {
  upstream = await listen((_req, res) => {
    upstreamRequests++;
    res.end("upstream");
  });
  log = logLines();
  gw = await startGateway(
    testConfig(upstream.url, {
      listen: { host: "127.0.0.1", port: 0, grace_ms: 2000, max_header_bytes: 2048, headers_timeout_ms: 300 },
      rate_limits: {
        classes: { read: { windows: [{ limit: 100, window_s: 3600 }] } },
        anonymous: { windows: [{ limit: ANON_LIMIT, window_s: 3600 }] },
      },
    }),
    { logger: createLogger("info", log.destination) },
  );
});

afterAll(async () => {
  await gw.close();
  await closeServer(upstream.server);
});

/** Status line, lower-cased fields and body of the one response a raw exchange got. */
function parse(raw: string): { status: number; headers: Record<string, string>; body: string } {
  const [head, ...rest] = raw.split("\r\n\r\n");
  const [statusLine, ...fields] = head!.split("\r\n");
  const headers: Record<string, string> = {};
  for (const f of fields) {
    const i = f.indexOf(":");
    headers[f.slice(0, i).trim().toLowerCase()] = f.slice(i + 1).trim();
  }
  return { status: Number(statusLine!.split(" ")[1]), headers, body: rest.join("\r\n\r\n") };
}

const cases: [string, string, number, string, string][] = [
  [
    "bad framing",
    `GET /v1/x HTTP/1.1\r\nHost: x\r\n${TOKEN}Content-Length: 1\r\nContent-Length: 2\r\n\r\nab`,
    400,
    "Bad request",
    "bad_framing",
  ],
  [
    "a head over max_header_bytes",
    `GET /v1/x HTTP/1.1\r\nHost: x\r\n${TOKEN}X-Filler: ${"a".repeat(4096)}\r\n\r\n`,
    431,
    "Request header fields too large",
    "header_too_large",
  ],
  [
    "two Host fields",
    `GET /v1/x HTTP/1.1\r\nHost: a\r\nHost: b\r\n${TOKEN}\r\n`,
    400,
    "Bad request",
    "bad_host",
  ],
  ["no Host field", `GET /v1/x HTTP/1.1\r\n${TOKEN}\r\n`, 400, "Bad request", "bad_host"],
];

describe("requests the parser or RFC 9112 refuses", () => {
  it.each(cases)(
    "%s: catalogue body, anonymous rate-limit fields, request id, access line, metric",
    async (_name, payload, status, message, code) => {
      const before = upstreamRequests;
      const res = parse(await rawRequest(gw.apiPort, payload));
      expect(res.status).toBe(status);
      expect(JSON.parse(res.body)).toEqual({ error: { code: status, message } });
      expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(res.headers["x-ratelimit-resource"]).toBe("anonymous");
      expect(res.headers["x-ratelimit-limit"]).toBe(String(ANON_LIMIT));
      expect(Number(res.headers["x-ratelimit-remaining"])).toBeLessThan(ANON_LIMIT);
      expect(Number(res.headers["x-ratelimit-reset"])).toBeGreaterThan(Date.now() / 1000);
      expect(res.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.headers.connection).toBe("close");
      const line = await log.waitFor((l) => l.reqId === res.headers["x-request-id"]);
      expect(line).toMatchObject({ status, class: "anonymous", error: code, route: null });
      expect(upstreamRequests).toBe(before);
    },
  );

  it("408 with the same fields when the head does not arrive within headers_timeout_ms", async () => {
    const res = parse(await rawRequest(gw.apiPort, `GET /v1/x HTTP/1.1\r\nHost: x\r\n`, 5000));
    expect(res.status).toBe(408);
    expect(JSON.parse(res.body)).toEqual({ error: { code: 408, message: "Request timeout" } });
    expect(res.headers["x-ratelimit-resource"]).toBe("anonymous");
    expect(res.headers["x-ratelimit-remaining"]).toMatch(/^\d+$/);
    const line = await log.waitFor((l) => l.reqId === res.headers["x-request-id"]);
    expect(line).toMatchObject({ status: 408, error: "request_timeout" });
  });

  it("counts each refusal in gateway_requests_total by status, and in the anonymous decisions", async () => {
    const m = await scrape(gw.adminUrl);
    for (const code of ["400", "431", "408"]) {
      expect(
        m.value("gateway_requests_total", { route: "none", class: "anonymous", code }),
        code,
      ).toBeGreaterThan(0);
    }
    expect(
      m.value("gateway_ratelimit_decisions_total", {
        class: "anonymous",
        plan: "none",
        outcome: "allowed",
        window: "none",
      }),
    ).toBe(5);
  });
});
