/**
 * `X-Forwarded-*` and `trust_proxy`. With 0 the gateway is the edge: the client IP is the socket
 * address whatever `X-Forwarded-For` says, and a client's `X-Forwarded-Proto`/`-Host` are replaced
 * by the listener's scheme and the request's `Host`. With N > 0 the N proxies in front are trusted:
 * the client IP is the `X-Forwarded-For` entry N hops from the right (so entries a client prepends
 * cannot choose it) and their `-Proto`/`-Host` are passed on. `X-Forwarded-For` is always appended
 * to, never replaced. Checked at the upstream, in the anonymous budgets and in the access line.
 */
import type { IncomingHttpHeaders, Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { captureLog, type CapturedLog } from "../helpers/access-lines.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";

let upstream: { server: Server; url: string };
const seen: IncomingHttpHeaders[] = [];
const auth = { authorization: "Bearer valid-token" };
const spoofed = {
  "x-forwarded-for": "6.6.6.6",
  "x-forwarded-proto": "https",
  "x-forwarded-host": "evil.example",
};

beforeAll(async () => {
  upstream = await listen((req, res) => {
    seen.push(req.headers);
    res.end("ok");
  });
});

afterAll(async () => {
  await closeServer(upstream.server);
});

async function gatewayTrusting(trustProxy: number, log: CapturedLog): Promise<TestGateway> {
  return startGateway(
    testConfig(upstream.url, {
      trust_proxy: trustProxy,
      rate_limits: {
        classes: { read: { windows: [{ limit: 100, window_s: 3600 }] } },
        anonymous: { windows: [{ limit: 10, window_s: 3600 }] },
      },
    }),
    { logger: log.logger },
  );
}

/** One call with `Host: api.example`; `upstream`: the headers the upstream received, when proxied. */
async function call(gw: TestGateway, headers: Record<string, string>) {
  const res = await request(`${gw.url}/v1/user`, { headers: { host: "api.example", ...headers } });
  return { res, upstream: res.status === 200 ? seen[seen.length - 1]! : undefined };
}

describe("trust_proxy: 0 (the gateway is the edge)", () => {
  const log = captureLog();
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await gatewayTrusting(0, log);
  });
  afterAll(async () => {
    await gw.close();
  });

  it("replaces a client's X-Forwarded-Proto/-Host and appends the peer to its X-Forwarded-For", async () => {
    const { upstream: h } = await call(gw, { ...auth, ...spoofed });
    expect(h?.["x-forwarded-proto"]).toBe("http");
    expect(h?.["x-forwarded-host"]).toBe("api.example");
    expect(h?.["x-forwarded-for"]).toBe("6.6.6.6, 127.0.0.1");
  });

  it("counts the socket address, whatever X-Forwarded-For claims", async () => {
    const remaining: string[] = [];
    for (const xff of ["1.1.1.1", "2.2.2.2", "1.1.1.1, 3.3.3.3"]) {
      const { res } = await call(gw, { "x-forwarded-for": xff });
      expect(res.status).toBe(401);
      remaining.push(res.headers["x-ratelimit-remaining"] as string);
    }
    expect(remaining).toEqual(["9", "8", "7"]); // one budget: 127.0.0.1's
    expect(
      log
        .accessLines(gw)
        .slice(-3)
        .map((l) => l.clientIp),
    ).toEqual(["127.0.0.1", "127.0.0.1", "127.0.0.1"]);
  });
});

describe("trust_proxy > 0 (proxies in front append to X-Forwarded-For)", () => {
  const log1 = captureLog();
  const log2 = captureLog();
  let one: TestGateway;
  let two: TestGateway;
  beforeAll(async () => {
    [one, two] = await Promise.all([gatewayTrusting(1, log1), gatewayTrusting(2, log2)]);
  });
  afterAll(async () => {
    await Promise.all([one.close(), two.close()]);
  });

  it("passes on the trusted proxy's X-Forwarded-Proto/-Host, and the request's own when absent", async () => {
    const { upstream: h } = await call(one, {
      ...auth,
      "x-forwarded-for": "203.0.113.7",
      "x-forwarded-proto": "https",
      "x-forwarded-host": "api.example.com",
    });
    expect(h?.["x-forwarded-proto"]).toBe("https");
    expect(h?.["x-forwarded-host"]).toBe("api.example.com");
    expect(h?.["x-forwarded-for"]).toBe("203.0.113.7, 127.0.0.1");
    const { upstream: bare } = await call(one, auth);
    expect(bare?.["x-forwarded-proto"]).toBe("http");
    expect(bare?.["x-forwarded-host"]).toBe("api.example");
    expect(bare?.["x-forwarded-for"]).toBe("127.0.0.1");
  });

  it("takes the client IP N hops from the right: entries a client prepends change nothing", async () => {
    const anonymous = async (gw: TestGateway, xff: string) =>
      (await call(gw, { "x-forwarded-for": xff })).res.headers["x-ratelimit-remaining"];
    // trust_proxy 1: the last entry is what the one trusted proxy saw.
    expect(await anonymous(one, "6.6.6.6, 203.0.113.7")).toBe("9");
    expect(await anonymous(one, "1.1.1.1, 203.0.113.7")).toBe("8"); // same client, spoofed prefix
    expect(await anonymous(one, "6.6.6.6, 203.0.113.8")).toBe("9"); // another client
    expect(
      log1
        .accessLines(one)
        .slice(-3)
        .map((l) => l.clientIp),
    ).toEqual(["203.0.113.7", "203.0.113.7", "203.0.113.8"]);
    // trust_proxy 2: the second proxy appended 10.0.0.2 (the first proxy's address).
    expect(await anonymous(two, "6.6.6.6, 198.51.100.1, 10.0.0.2")).toBe("9");
    expect(await anonymous(two, "7.7.7.7, 198.51.100.1, 10.0.0.2")).toBe("8");
    expect(log2.accessLines(two).at(-1)?.clientIp).toBe("198.51.100.1");
  });
});
