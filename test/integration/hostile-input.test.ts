/**
 * Hostile input: each shape gets its expected answer, and the upstream's own request
 * log proves nothing was forwarded that should not be. Raw bytes go over TCP (Node's client would
 * refuse to send most of them). Request smuggling payloads carry a *valid* token in the smuggled
 * request, so a desync would show up at the upstream as a request to `/v1/smuggled`.
 *
 * Slowloris (headersTimeout/requestTimeout) is covered with the lifecycle tests.
 */
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import http, { type Server } from "node:http";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeServer, listen, request } from "../helpers/http.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { introspectionAuthConfig, startAuthServer, type AuthServer } from "../helpers/oidc.js";

const MAX_HEADER_BYTES = 16_384;
const TOKEN = "Authorization: Bearer valid-token\r\n";
const SMUGGLED = `GET /v1/smuggled HTTP/1.1\r\nHost: x\r\n${TOKEN}\r\n`;
const BAD_REQUEST = { error: { code: 400, message: "Bad request" } };

/** A request the upstream received; `done` settles when its connection side is finished. */
interface Seen {
  method: string;
  url: string;
  body: string;
  /** The body arrived to its end (false: aborted mid-body). */
  complete: boolean;
  done: Promise<void>;
}

let upstream: { server: Server; url: string };
const seen: Seen[] = [];
const upstreamArrivals = new (await import("node:events")).EventEmitter();
/** Stands where an open proxy would connect to: it must never see a connection. */
let victim: { server: Server; url: string; port: number };
let victimConnections = 0;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await listen((req, res) => {
    const chunks: Buffer[] = [];
    let settle = () => {};
    const entry: Seen = {
      method: req.method ?? "",
      url: req.url ?? "",
      body: "",
      complete: false,
      done: new Promise<void>((resolve) => (settle = resolve)),
    };
    seen.push(entry);
    upstreamArrivals.emit("request", entry);
    req.on("data", (c: Buffer) => {
      chunks.push(c);
      entry.body = Buffer.concat(chunks).toString("latin1");
      upstreamArrivals.emit("data", entry);
    });
    req.on("end", () => {
      entry.complete = true;
      const body = JSON.stringify({ url: req.url });
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    });
    req.on("error", () => {});
    req.on("close", () => settle());
  });
  victim = await listen((_req, res) => res.end("victim"));
  victim.server.on("connection", () => (victimConnections += 1));
  const base = testConfig(upstream.url);
  gw = await startGateway({
    ...base,
    listen: { host: "127.0.0.1", port: 0, grace_ms: 2000, max_header_bytes: MAX_HEADER_BYTES },
    rate_limits: {
      classes: {
        search: { match: { paths: ["/v1/search"] }, windows: [{ limit: 10_000, window_s: 60 }] },
        read: { match: { methods: ["GET", "HEAD"] }, windows: [{ limit: 10_000, window_s: 60 }] },
        write: {
          match: { methods: ["POST", "PUT", "PATCH", "DELETE"] },
          windows: [{ limit: 10_000, window_s: 60 }],
        },
      },
      anonymous: { windows: [{ limit: 10_000, window_s: 60 }] },
    },
  });
});

afterAll(async () => {
  await gw.close();
  await closeServer(upstream.server);
  await closeServer(victim.server);
  // Whatever ran in this file: the smuggled request never reached the upstream.
  expect(seen.filter((s) => s.url.includes("smuggled"))).toEqual([]);
});

/** One parsed HTTP/1.1 response out of a raw byte stream. */
interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Splits what the gateway wrote into responses (Content-Length framing, as the gateway uses). */
function parseResponses(raw: string): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = raw;
  while (rest.startsWith("HTTP/1.1 ")) {
    const headEnd = rest.indexOf("\r\n\r\n");
    if (headEnd === -1) break;
    const [statusLine, ...lines] = rest.slice(0, headEnd).split("\r\n");
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    if (headers["transfer-encoding"] !== undefined) throw new Error("parseResponses: chunked response");
    const length = Number(headers["content-length"] ?? 0);
    out.push({
      status: Number(statusLine!.split(" ")[1]),
      headers,
      body: rest.slice(headEnd + 4, headEnd + 4 + length),
    });
    rest = rest.slice(headEnd + 4 + length);
  }
  return out;
}

/**
 * Writes `payload` on a new connection and collects the answer.
 * @returns the parsed responses, and whether the gateway closed the connection itself
 */
function exchange(
  payload: string | Buffer,
  timeoutMs = 2000,
): Promise<{ responses: RawResponse[]; raw: string; closedByServer: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(gw.apiPort, "127.0.0.1");
    const chunks: Buffer[] = [];
    let closedByServer = false;
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("end", () => {
      closedByServer = true;
      socket.end();
    });
    socket.on("error", () => {
      closedByServer = true;
    });
    socket.on("close", () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks).toString("latin1");
      resolve({ responses: parseResponses(raw), raw, closedByServer });
    });
    socket.write(typeof payload === "string" ? Buffer.from(payload, "latin1") : payload);
  });
}

/** Runs `fn` and returns the upstream requests that arrived meanwhile. */
async function forwardedDuring(fn: () => Promise<void>): Promise<Seen[]> {
  const before = seen.length;
  await fn();
  return seen.slice(before);
}

function expectJsonError(res: RawResponse | undefined, status: number, message: string): void {
  expect(res?.status).toBe(status);
  expect(res?.headers["content-type"]).toBe("application/json; charset=utf-8");
  expect(JSON.parse(res!.body)).toEqual({ error: { code: status, message } });
}

describe("request heads the HTTP parser refuses: 400 JSON, connection closed, nothing forwarded", () => {
  const post = (headers: string, body = "") =>
    `POST /v1/x HTTP/1.1\r\nHost: x\r\n${TOKEN}${headers}\r\n${body}`;
  it.each([
    ["a CR inside a header value", `GET /v1/x HTTP/1.1\r\nHost: x\r\n${TOKEN}X-A: a\rInjected: 1\r\n\r\n`],
    [
      "a bare LF inside a header value",
      `GET /v1/x HTTP/1.1\r\nHost: x\r\n${TOKEN}X-A: a\nInjected: 1\r\n\r\n`,
    ],
    ["a NUL inside a header value", `GET /v1/x HTTP/1.1\r\nHost: x\r\n${TOKEN}X-A: a\0b\r\n\r\n`],
    ["an obs-fold continuation line", `GET /v1/x HTTP/1.1\r\nHost: x\r\n${TOKEN}X-A: a\r\n b\r\n\r\n`],
    [
      "CL.TE: Content-Length and Transfer-Encoding together",
      post("Content-Length: 4\r\nTransfer-Encoding: chunked\r\n", `0\r\n\r\n${SMUGGLED}`),
    ],
    [
      "TE.CL: Transfer-Encoding then Content-Length",
      post(
        "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n",
        `${SMUGGLED.length.toString(16)}\r\n${SMUGGLED}\r\n0\r\n\r\n`,
      ),
    ],
    [
      "two different Content-Length values",
      post("Content-Length: 4\r\nContent-Length: 40\r\n", `abcd${SMUGGLED}`),
    ],
    ["two equal Content-Length fields", post("Content-Length: 4\r\nContent-Length: 4\r\n", "abcd")],
    ["a Content-Length list", post("Content-Length: 4, 4\r\n", "abcd")],
    ["a signed Content-Length", post("Content-Length: +4\r\n", "abcd")],
    ["a hexadecimal Content-Length", post("Content-Length: 0x4\r\n", "abcd")],
    ["a negative Content-Length", post("Content-Length: -1\r\n", SMUGGLED)],
    [
      "Transfer-Encoding: chunked, identity",
      post("Transfer-Encoding: chunked, identity\r\n", `0\r\n\r\n${SMUGGLED}`),
    ],
    [
      "a second Transfer-Encoding field ending in identity",
      post("Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n", `0\r\n\r\n${SMUGGLED}`),
    ],
    ["Transfer-Encoding: identity alone", post("Transfer-Encoding: identity\r\n", SMUGGLED)],
    ["an unknown coding (xchunked)", post("Transfer-Encoding: xchunked\r\n", `0\r\n\r\n${SMUGGLED}`)],
    [
      "a space before the colon (Transfer-Encoding : chunked)",
      post("Transfer-Encoding : chunked\r\n", `0\r\n\r\n${SMUGGLED}`),
    ],
    [
      "a chunk-size line ended by a bare LF",
      post("Transfer-Encoding: chunked\r\n", `4;x=y\nabcd\r\n0\r\n\r\n${SMUGGLED}`),
    ],
    ["an unknown HTTP version", `GET /v1/x HTTP/9.9\r\nHost: x\r\n${TOKEN}\r\n`],
    ["a lower-case method", `get /v1/x HTTP/1.1\r\nHost: x\r\n${TOKEN}\r\n`],
    ["a method with a non-token character", `G@T /v1/x HTTP/1.1\r\nHost: x\r\n${TOKEN}\r\n`],
    ["a space inside the request target", `GET /v1/a b HTTP/1.1\r\nHost: x\r\n${TOKEN}\r\n`],
    [
      "a control character inside the request target",
      `GET /v1/.\t./admin HTTP/1.1\r\nHost: x\r\n${TOKEN}\r\n`,
    ],
    [
      "garbage bytes instead of a request line",
      Buffer.concat([randomBytes(64).fill(0x01, 0, 1), Buffer.from("\r\n\r\n")]),
    ],
    ["binary garbage then CRLFs", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"],
  ])("%s", async (_name, payload) => {
    const forwarded = await forwardedDuring(async () => {
      const { responses, closedByServer } = await exchange(payload);
      expect(responses).toHaveLength(1);
      expectJsonError(responses[0], 400, BAD_REQUEST.error.message);
      expect(responses[0]!.headers.connection).toBe("close");
      expect(closedByServer).toBe(true);
    });
    expect(forwarded).toEqual([]);
  });

  it("answers 431 JSON to a head larger than listen.max_header_bytes and forwards nothing", async () => {
    const filler = "a".repeat(MAX_HEADER_BYTES);
    const forwarded = await forwardedDuring(async () => {
      const { responses, closedByServer } = await exchange(
        `GET /v1/x HTTP/1.1\r\nHost: x\r\n${TOKEN}X-Filler: ${filler}\r\n\r\n`,
      );
      expect(responses).toHaveLength(1);
      expectJsonError(responses[0], 431, "Request header fields too large");
      expect(closedByServer).toBe(true);
    });
    expect(forwarded).toEqual([]);
  });

  it("answers 431 to many small headers adding up past the limit", async () => {
    const many = Array.from({ length: 800 }, (_, i) => `X-H${i}: ${"v".repeat(16)}\r\n`).join("");
    const forwarded = await forwardedDuring(async () => {
      const { responses } = await exchange(`GET /v1/x HTTP/1.1\r\nHost: x\r\n${TOKEN}${many}\r\n`);
      expect(responses.map((r) => r.status)).toEqual([431]);
    });
    expect(forwarded).toEqual([]);
  });
});

describe("request bodies cannot smuggle a request to the upstream", () => {
  it("a chunked body holding an HTTP request reaches the upstream as the body of one request", async () => {
    const forwarded = await forwardedDuring(async () => {
      const { responses } = await exchange(
        `POST /v1/x HTTP/1.1\r\nHost: x\r\n${TOKEN}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n` +
          `${SMUGGLED.length.toString(16)}\r\n${SMUGGLED}\r\n0\r\n\r\n`,
      );
      expect(responses.map((r) => r.status)).toEqual([200]);
    });
    expect(forwarded.map((s) => [s.method, s.url, s.body, s.complete])).toEqual([
      ["POST", "/v1/x", SMUGGLED, true],
    ]);
  });

  it("bytes after a Content-Length body are the client's next request and are authenticated on their own", async () => {
    const forwarded = await forwardedDuring(async () => {
      const { responses } = await exchange(
        `POST /v1/x HTTP/1.1\r\nHost: x\r\n${TOKEN}Content-Length: 5\r\n\r\nabcde` +
          `GET /v1/smuggled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      );
      expect(responses.map((r) => r.status)).toEqual([200, 401]);
      expect(responses[1]!.headers["x-ratelimit-resource"]).toBe("anonymous");
    });
    expect(forwarded.map((s) => [s.method, s.url, s.body])).toEqual([["POST", "/v1/x", "abcde"]]);
  });

  it.each([
    ["Transfer-Encoding: chunked", "chunked"],
    // RFC 9110 §5.6.3: a tab is optional whitespace, so this field is plain `chunked`.
    ["Transfer-Encoding:\tchunked", "tab before chunked"],
    ["Transfer-Encoding: CHUNKED", "upper-case chunked"],
  ])("%s: the body ends at the last chunk and what follows is authenticated on its own", async (te) => {
    const forwarded = await forwardedDuring(async () => {
      const { responses } = await exchange(
        `POST /v1/x HTTP/1.1\r\nHost: x\r\n${TOKEN}${te}\r\n\r\n5\r\nabcde\r\n0\r\n\r\n` +
          `GET /v1/smuggled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      );
      expect(responses.map((r) => r.status)).toEqual([200, 401]);
    });
    expect(forwarded.map((s) => [s.method, s.url, s.body])).toEqual([["POST", "/v1/x", "abcde"]]);
  });

  it("a malformed chunk mid-body aborts the forwarded request, answers 400, and nothing after it is parsed", async () => {
    const socket = net.connect(gw.apiPort, "127.0.0.1");
    const received: Buffer[] = [];
    socket.on("data", (c: Buffer) => received.push(c));
    const closed = once(socket, "close");
    const arrived = once(upstreamArrivals, "data") as Promise<[Seen]>;
    socket.write(
      `POST /v1/x HTTP/1.1\r\nHost: x\r\n${TOKEN}Transfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n`,
    );
    const [entry] = await arrived;
    expect([entry.url, entry.body]).toEqual(["/v1/x", "abcde"]);
    socket.write(`zz\r\n${SMUGGLED}`);
    await closed;
    await entry.done;
    expect(entry.complete).toBe(false);
    expect(seen.at(-1)).toBe(entry);
    const responses = parseResponses(Buffer.concat(received).toString("latin1"));
    expect(responses.map((r) => r.status)).toEqual([400]);
  });
});

describe("never an open proxy", () => {
  const victimHost = () => `127.0.0.1:${victim.port}`;

  it.each([
    [
      "an absolute-form URI to another host",
      () => `GET http://${victimHost()}/v1/x HTTP/1.1\r\nHost: ${victimHost()}\r\n`,
    ],
    [
      "an absolute-form URI naming the route",
      () => `GET http://evil.example/v1/x HTTP/1.1\r\nHost: evil.example\r\n`,
    ],
    ["an absolute-form URI to the root", () => "GET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n"],
    ["the asterisk form", () => "OPTIONS * HTTP/1.1\r\nHost: x\r\n"],
  ])("%s gets 400 and reaches nobody", async (_name, head) => {
    const victimBefore = victimConnections;
    const forwarded = await forwardedDuring(async () => {
      const { responses } = await exchange(`${head()}${TOKEN}Connection: close\r\n\r\n`);
      expect(responses).toHaveLength(1);
      expectJsonError(responses[0], 400, "Bad request");
      expect(responses[0]!.headers["x-ratelimit-resource"]).toBe("anonymous");
    });
    expect(forwarded).toEqual([]);
    expect(victimConnections).toBe(victimBefore);
  });

  it.each([
    ["CONNECT to a local server", () => `CONNECT ${victimHost()} HTTP/1.1\r\nHost: ${victimHost()}\r\n`],
    ["CONNECT to a remote host", () => "CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n"],
  ])("%s is closed without a tunnel", async (_name, head) => {
    const victimBefore = victimConnections;
    const forwarded = await forwardedDuring(async () => {
      // The tunnelled request would come back as the victim's "victim" body.
      const { raw, closedByServer } = await exchange(
        `${head()}${TOKEN}\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n`,
      );
      expect(closedByServer).toBe(true);
      expect(raw).not.toMatch(/^HTTP\/1\.1 2/);
      expect(raw).not.toContain("victim");
    });
    expect(forwarded).toEqual([]);
    expect(victimConnections).toBe(victimBefore);
  });
});

/**
 * How a lenient upstream could read a forwarded path: `\` and encoded slashes as separators,
 * decoded once, dot segments removed. The gateway must keep even that reading inside the route.
 */
function lenientReading(path: string): string {
  const decoded = decodeURIComponent(path.replace(/%(2f|5c)/gi, "/")).replace(/\\/g, "/");
  const out: string[] = [];
  for (const seg of decoded.split("/").slice(1)) {
    if (seg === "..") out.pop();
    else if (seg !== ".") out.push(seg);
  }
  return "/" + out.join("/");
}

describe("paths with encoded dots and slashes stay inside the route", () => {
  it.each([
    // [request path, status, class, path the upstream sees]
    ["/v1/%2e%2e/admin", 404, "anonymous", null],
    ["/v1/.%2e/admin", 404, "anonymous", null],
    ["/v1/%2E%2e/%2e%2E/admin", 404, "anonymous", null],
    ["/v1/..", 404, "anonymous", null],
    ["/v1/%2f..%2f..%2fadmin", 404, "anonymous", null],
    ["/v1/%5c..%5c..%5cadmin", 404, "anonymous", null],
    ["/v1/a%2f..%2f..%2fadmin", 404, "anonymous", null],
    ["//evil.example/v1/x", 404, "anonymous", null],
    ["/v10/x", 404, "anonymous", null],
    ["/v1/a/%2e%2e/search", 200, "search", "/v1/search"],
    ["/v1/a/%2e/b", 200, "read", "/v1/a/b"],
    ["/v1/%73earch", 200, "search", "/v1/%73earch"],
    ["/v1/a%2f..%2fsearch", 200, "search", "/v1/a%2f..%2fsearch"],
    ["/v1%2fsearch", 200, "search", "/v1%2fsearch"],
    ["/v1/x%5c..%5csearch", 200, "search", "/v1/x%5c..%5csearch"],
    ["/v1/%252e%252e/admin", 200, "read", "/v1/%252e%252e/admin"],
    ["/v1/%252e%252e%252fadmin", 200, "read", "/v1/%252e%252e%252fadmin"],
  ])("%s: %i as class %s, the upstream sees %s", async (path, status, cls, upstreamPath) => {
    const forwarded = await forwardedDuring(async () => {
      const { responses } = await exchange(
        `GET ${path} HTTP/1.1\r\nHost: x\r\n${TOKEN}Connection: close\r\n\r\n`,
      );
      expect(responses.map((r) => r.status)).toEqual([status]);
      expect(responses[0]!.headers["x-ratelimit-resource"]).toBe(cls);
    });
    expect(forwarded.map((s) => s.url)).toEqual(upstreamPath === null ? [] : [upstreamPath]);
    for (const s of forwarded) expect(lenientReading(s.url)).toMatch(/^\/v1(\/|$)/);
  });

  it.each([
    ["a raw backslash, which URL parsers read as a slash", "/v1/x\\..\\..\\admin"],
    ["invalid UTF-8", "/v1/%ff"],
    ["an overlong UTF-8 dot", "/v1/%c0%ae%c0%ae/admin"],
    ["a truncated UTF-8 sequence", "/v1/%e2%82"],
    ["an encoded NUL", "/v1/a%00b"],
    ["a malformed escape", "/v1/%zz"],
    ["a lone percent sign", "/v1/%"],
  ])("%s gets 400 and is not forwarded", async (_name, path) => {
    const forwarded = await forwardedDuring(async () => {
      const { responses } = await exchange(
        `GET ${path} HTTP/1.1\r\nHost: x\r\n${TOKEN}Connection: close\r\n\r\n`,
      );
      expect(responses).toHaveLength(1);
      expectJsonError(responses[0], 400, "Bad request");
    });
    expect(forwarded).toEqual([]);
  });

  it("a raw non-ASCII byte in the path gets 400", async () => {
    const payload = Buffer.concat([
      Buffer.from("GET /v1/"),
      Buffer.from([0xff]),
      Buffer.from(` HTTP/1.1\r\nHost: x\r\n${TOKEN}Connection: close\r\n\r\n`),
    ]);
    const forwarded = await forwardedDuring(async () => {
      const { responses } = await exchange(payload);
      expect(responses.map((r) => r.status)).toEqual([400]);
    });
    expect(forwarded).toEqual([]);
  });
});

/** Value of one sample in the admin listener's Prometheus text. */
async function metric(adminUrl: string, sample: string): Promise<number> {
  const text = (await request(`${adminUrl}/metrics`)).body;
  const line = text.split("\n").find((l) => l.startsWith(sample + " "));
  return line === undefined ? 0 : Number(line.slice(sample.length + 1));
}

describe("an enormous Authorization header", () => {
  it("is answered 400 malformed without a token-cache lookup or an upstream call", async () => {
    const miss = 'gateway_token_cache_lookups_total{result="miss"}';
    const missesBefore = await metric(gw.adminUrl, miss);
    const token = "a".repeat(12 * 1024); // a valid b64token, under max_header_bytes
    const forwarded = await forwardedDuring(async () => {
      const res = await request(`${gw.url}/v1/x`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body)).toEqual({
        error: { code: 400, message: "Malformed Authorization header" },
      });
      expect(res.headers["www-authenticate"]).toBe('Bearer realm="api", error="invalid_request"');
      expect(res.headers["x-ratelimit-resource"]).toBe("anonymous");
    });
    expect(forwarded).toEqual([]);
    expect(await metric(gw.adminUrl, miss)).toBe(missesBefore);
  });
});

describe("a flood of invalid tokens against a real introspection server", () => {
  const ANONYMOUS_LIMIT = 10;
  let auth: AuthServer;
  let fgw: TestGateway;
  let agent: http.Agent;

  beforeAll(async () => {
    // A loaded authorization server: every flooding request is in flight at once.
    auth = await startAuthServer({ introspectionDelayMs: 100 });
    const base = testConfig(upstream.url);
    fgw = await startGateway({
      ...base,
      auth: introspectionAuthConfig(auth),
      rate_limits: {
        ...(base.rate_limits as Record<string, unknown>),
        anonymous: { windows: [{ limit: ANONYMOUS_LIMIT, window_s: 3600 }] },
      },
    });
    agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  });

  afterAll(async () => {
    agent.destroy();
    await fgw.close();
    await auth.stop();
  });

  it("introspects at most the anonymous limit of 200 concurrent fresh tokens, then answers 429", async () => {
    const cachedToken = await auth.issueToken("read");
    const call = (token: string) =>
      request(`${fgw.url}/v1/x`, { headers: { authorization: `Bearer ${token}` }, agent });
    expect((await call(cachedToken)).status).toBe(200);
    const introspectionsBefore = auth.introspections();
    const upstreamBefore = seen.length;

    const flood = Array.from({ length: 200 }, () => randomBytes(24).toString("base64url"));
    const answers = await Promise.all(flood.map(call));

    const byStatus = new Map<number, number>();
    for (const a of answers) byStatus.set(a.status, (byStatus.get(a.status) ?? 0) + 1);
    expect(Object.fromEntries(byStatus)).toEqual({ 401: ANONYMOUS_LIMIT, 429: 200 - ANONYMOUS_LIMIT });
    expect(auth.introspections() - introspectionsBefore).toBeLessThanOrEqual(ANONYMOUS_LIMIT);
    expect(seen.length).toBe(upstreamBefore);
    const limited = answers.find((a) => a.status === 429)!;
    expect(limited.headers["x-ratelimit-resource"]).toBe("anonymous");
    expect(Number(limited.headers["retry-after"])).toBeGreaterThanOrEqual(1);

    // The cached valid token keeps working; a fresh valid one waits for the window (no introspection).
    const introspectionsAfter = auth.introspections();
    expect((await call(cachedToken)).status).toBe(200);
    expect((await call(await auth.issueToken("read"))).status).toBe(429);
    expect(auth.introspections()).toBe(introspectionsAfter);
  });
});
