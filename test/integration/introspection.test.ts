/**
 * The RFC 7662 client and the token cache against a real authorization server (oidc-provider 9,
 * in-process on 127.0.0.1:0) and raw Node servers that misbehave. Time in the cache comes from a
 * ManualClock started at the real time, so the provider's real `exp` values line up with it.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../gateway/base/clock.js";
import { IntrospectionClient } from "../../gateway/auth/introspection.js";
import { TokenCache } from "../../gateway/auth/token-cache.js";
import {
  IntrospectionUnavailableError,
  type IntrospectionSource,
} from "../../gateway/auth/introspection-source.js";
import type { TokenInfo } from "../../gateway/base/token-info.js";
import type { TokenCacheConfig } from "../../gateway/config/schema.js";
import { createMetrics } from "../../gateway/observability/metrics.js";
import {
  GATEWAY_CLIENT_ID as GATEWAY_ID,
  GATEWAY_CLIENT_SECRET as GATEWAY_SECRET,
  startAuthServer,
  type AuthServer,
} from "../helpers/oidc.js";

const metrics = createMetrics(new Registry(), "test");
const silent = pino({ level: "silent" });
/** Lifetime of the tokens the helper's server issues by default (s). */
const TOKEN_TTL_S = 600;

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function stopServer(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

function newClient(url: string, clientSecret = GATEWAY_SECRET, timeoutMs = 2_000): IntrospectionClient {
  return new IntrospectionClient({ url, clientId: GATEWAY_ID, clientSecret, timeoutMs, metrics });
}

/** Counts calls into the real client (not a mock: every call goes to the server). */
class CountingSource implements IntrospectionSource {
  readonly kind = "introspection";
  calls = 0;
  constructor(private readonly inner: IntrospectionSource) {}
  introspect(token: string): Promise<TokenInfo> {
    this.calls += 1;
    return this.inner.introspect(token);
  }
  close(): Promise<void> {
    return this.inner.close?.() ?? Promise.resolve();
  }
}

const CACHE: TokenCacheConfig = {
  max_entries: 1000,
  max_ttl_s: 300,
  negative_ttl_s: 10,
  stale_if_error_s: 60,
};

function newCache(source: IntrospectionSource, config: Partial<TokenCacheConfig> = {}, logger = silent) {
  const clock = new ManualClock(Date.now());
  const cache = new TokenCache({ source, config: { ...CACHE, ...config }, clock, metrics, logger });
  return { cache, clock };
}

async function counterValue(
  counter: {
    get(): Promise<{ values: { labels: Partial<Record<string, string | number>>; value: number }[] }>;
  },
  result: string,
): Promise<number> {
  return (await counter.get()).values.find((v) => v.labels.result === result)?.value ?? 0;
}

async function unavailableReason(p: Promise<unknown>): Promise<string> {
  const err: unknown = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(IntrospectionUnavailableError);
  return (err as IntrospectionUnavailableError).reason;
}

/** A describe block's own oidc-provider and an introspection client of it. */
function useAuthServerAndClient(): { auth: AuthServer; client: IntrospectionClient } {
  const ctx = {} as { auth: AuthServer; client: IntrospectionClient };
  beforeAll(async () => {
    ctx.auth = await startAuthServer();
    ctx.client = newClient(ctx.auth.introspectionUrl);
  });
  afterAll(async () => {
    await ctx.client.close();
    await ctx.auth.stop();
  });
  return ctx;
}

describe("IntrospectionClient against oidc-provider (RFC 7662)", () => {
  const ctx = useAuthServerAndClient();

  it("maps an active token to client_id, scope list and exp, and counts it", async () => {
    const before = await counterValue(metrics.introspectionRequests, "active");
    const token = await ctx.auth.issueToken("read write");
    const info = await ctx.client.introspect(token);
    expect(info).toEqual({
      active: true,
      clientId: "app",
      scope: ["read", "write"],
      exp: expect.any(Number),
    });
    expect(info.exp! - Date.now() / 1000).toBeGreaterThan(TOKEN_TTL_S - 30);
    expect(info.exp! - Date.now() / 1000).toBeLessThanOrEqual(TOKEN_TTL_S + 1);
    expect(await counterValue(metrics.introspectionRequests, "active")).toBe(before + 1);
  });

  it("answers inactive for an unknown token", async () => {
    const before = await counterValue(metrics.introspectionRequests, "inactive");
    await expect(ctx.client.introspect("never-issued-token")).resolves.toEqual({ active: false, scope: [] });
    expect(await counterValue(metrics.introspectionRequests, "inactive")).toBe(before + 1);
  });

  it("fails with reason status when the gateway's secret is wrong, without leaking it or the token", async () => {
    const wrong = newClient(ctx.auth.introspectionUrl, "wrong-secret-value");
    const token = await ctx.auth.issueToken("read");
    const err = (await wrong.introspect(token).catch((e: unknown) => e)) as IntrospectionUnavailableError;
    await wrong.close();
    expect(err).toBeInstanceOf(IntrospectionUnavailableError);
    expect(err.reason).toBe("status");
    expect(err.message).toContain("401");
    expect(err.message).not.toContain(token);
    expect(err.message).not.toContain("wrong-secret-value");
  });
});

describe("IntrospectionClient against servers that misbehave", () => {
  const servers: http.Server[] = [];
  afterAll(async () => {
    await Promise.all(servers.map(stopServer));
  });
  async function serve(listener: http.RequestListener): Promise<string> {
    const server = http.createServer(listener);
    servers.push(server);
    return listen(server);
  }

  it("gives up after timeout_ms with reason timeout when the server never answers", async () => {
    const url = await serve(() => {});
    const client = newClient(url, GATEWAY_SECRET, 150);
    const before = await counterValue(metrics.introspectionRequests, "error");
    const started = performance.now();
    expect(await unavailableReason(client.introspect("some-token"))).toBe("timeout");
    expect(performance.now() - started).toBeLessThan(1_500);
    expect(await counterValue(metrics.introspectionRequests, "error")).toBe(before + 1);
    await client.close();
  });

  it("fails with reason network when nothing listens", async () => {
    const server = http.createServer();
    const url = await listen(server);
    await stopServer(server);
    const client = newClient(url);
    expect(await unavailableReason(client.introspect("some-token"))).toBe("network");
    await client.close();
  });

  it.each([
    ["not JSON", "<html>oops</html>"],
    ["active not a boolean", '{"active":"true"}'],
    ["exp not a number", '{"active":true,"exp":"soon"}'],
    ["a JSON array", "[true]"],
  ])("fails with reason invalid_response on %s", async (_what, body) => {
    const url = await serve((_req, res) =>
      res.writeHead(200, { "content-type": "application/json" }).end(body),
    );
    const client = newClient(url);
    expect(await unavailableReason(client.introspect("some-token"))).toBe("invalid_response");
    await client.close();
  });

  it("sends RFC 7662 §2.1 form fields and RFC 6749 §2.3.1 Basic credentials", async () => {
    let seen: { auth?: string; type?: string; body: string } = { body: "" };
    const url = await serve((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        seen = { auth: req.headers.authorization, type: req.headers["content-type"], body };
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"active":true,"sub":"alice","username":"al","scope":"a  b","exp":4102444800}');
      });
    });
    const client = newClient(`${url}/oauth2/introspect?v=1`);
    const info = await client.introspect("tok en+/=");
    await client.close();
    expect(info).toEqual({ active: true, sub: "alice", username: "al", scope: ["a", "b"], exp: 4102444800 });
    expect(seen.type).toBe("application/x-www-form-urlencoded");
    expect(Object.fromEntries(new URLSearchParams(seen.body))).toEqual({
      token: "tok en+/=",
      token_type_hint: "access_token",
    });
    const decoded = Buffer.from(seen.auth!.replace(/^Basic /, ""), "base64").toString();
    expect(decoded).toBe("gateway:gw+secret%3A%2B%2F%25%26%3D");
  });
});

describe("TokenCache in front of oidc-provider", () => {
  const ctx = useAuthServerAndClient();

  it("makes exactly one introspection call for 200 concurrent first uses of a token", async () => {
    const token = await ctx.auth.issueToken("read");
    const hash = TokenCache.hashToken(token);
    const { cache } = newCache(ctx.client);
    const before = ctx.auth.introspections();
    const missesBefore = await counterValue(metrics.tokenCacheLookups, "miss");
    const lookups = await Promise.all(Array.from({ length: 200 }, () => cache.fetch(token, hash)));
    expect(ctx.auth.introspections() - before).toBe(1);
    expect(new Set(lookups.map((l) => l.status))).toEqual(new Set(["active"]));
    expect(await counterValue(metrics.tokenCacheLookups, "miss")).toBe(missesBefore + 200);
    const hitsBefore = await counterValue(metrics.tokenCacheLookups, "hit");
    expect(cache.get(hash)).toMatchObject({ active: true, clientId: "app", scope: ["read"] });
    expect(cache.has(hash)).toBe(true);
    expect(await counterValue(metrics.tokenCacheLookups, "hit")).toBe(hitsBefore + 1);
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("re-asks the source after max_ttl_s while exp is still ahead", async () => {
    const token = await ctx.auth.issueToken("read");
    const hash = TokenCache.hashToken(token);
    const source = new CountingSource(ctx.client);
    const { cache, clock } = newCache(source, { max_ttl_s: 60 });
    expect((await cache.fetch(token, hash)).status).toBe("active");
    clock.advance(59_999);
    expect(cache.get(hash)).toBeDefined();
    clock.advance(1);
    expect(cache.get(hash)).toBeUndefined();
    expect(cache.has(hash)).toBe(false);
    expect((await cache.fetch(token, hash)).status).toBe("active");
    expect(source.calls).toBe(2);
  });

  it("stops serving a token at its exp, before max_ttl_s, and then treats it as inactive", async () => {
    const token = await ctx.auth.issueToken("write");
    const hash = TokenCache.hashToken(token);
    const source = new CountingSource(ctx.client);
    const { cache, clock } = newCache(source, { max_ttl_s: 3600 });
    const first = await cache.fetch(token, hash);
    expect(first.status).toBe("active");
    const expMs = (first as { info: TokenInfo }).info.exp! * 1000;
    clock.set(expMs - 1);
    expect(cache.get(hash)?.scope).toEqual(["write"]);
    clock.set(expMs);
    expect(cache.get(hash)).toBeUndefined();
    // The provider (on real time) still calls it active; its exp is past on the gateway's clock.
    expect(await cache.fetch(token, hash)).toEqual({ status: "inactive" });
    expect(source.calls).toBe(2);
    expect(cache.get(hash)).toEqual({ active: false, scope: [] });
  });

  it("caches an unknown token for negative_ttl_s, counting negative hits", async () => {
    const source = new CountingSource(ctx.client);
    const { cache, clock } = newCache(source, { negative_ttl_s: 10 });
    const hash = TokenCache.hashToken("unknown-token");
    expect(await cache.fetch("unknown-token", hash)).toEqual({ status: "inactive" });
    const negativeBefore = await counterValue(metrics.tokenCacheLookups, "negative");
    clock.advance(9_999);
    expect(await cache.fetch("unknown-token", hash)).toEqual({ status: "inactive" });
    expect(cache.get(hash)).toEqual({ active: false, scope: [] });
    expect(cache.has(hash)).toBe(true);
    expect(source.calls).toBe(1);
    expect(await counterValue(metrics.tokenCacheLookups, "negative")).toBe(negativeBefore + 2);
    clock.advance(1);
    expect(cache.has(hash)).toBe(false);
    expect(await cache.fetch("unknown-token", hash)).toEqual({ status: "inactive" });
    expect(source.calls).toBe(2);
  });

  it("holds at most max_entries, and an introspection evicted in flight still answers", async () => {
    const [t1, t2, t3] = await Promise.all([
      ctx.auth.issueToken("read"),
      ctx.auth.issueToken("read"),
      ctx.auth.issueToken("read"),
    ]);
    const [h1, h2, h3] = [t1, t2, t3].map(TokenCache.hashToken) as [string, string, string];
    const { cache } = newCache(ctx.client, { max_entries: 2 });
    // t3's call starts while t1 and t2 are in flight, so t1's in-flight entry is evicted.
    const lookups = await Promise.all([cache.fetch(t1, h1), cache.fetch(t2, h2), cache.fetch(t3, h3)]);
    expect(lookups.map((l) => l.status)).toEqual(["active", "active", "active"]);
    expect([cache.has(h1), cache.has(h2), cache.has(h3)]).toEqual([false, true, true]);
  });

  it("does not cache negative answers when negative_ttl_s is 0", async () => {
    const source = new CountingSource(ctx.client);
    const { cache } = newCache(source, { negative_ttl_s: 0 });
    const hash = TokenCache.hashToken("unknown-token");
    expect(await cache.fetch("unknown-token", hash)).toEqual({ status: "inactive" });
    expect(cache.get(hash)).toBeUndefined();
    expect(await cache.fetch("unknown-token", hash)).toEqual({ status: "inactive" });
    expect(source.calls).toBe(2);
  });
});

describe("TokenCache when the introspection source fails (stale_if_error_s)", () => {
  /** A cache warmed with one real token, then its authorization server stopped. */
  async function warmThenStop(config: Partial<TokenCacheConfig>) {
    const auth = await startAuthServer();
    const client = newClient(auth.introspectionUrl);
    const source = new CountingSource(client);
    const warnings: string[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => void warnings.push(line) });
    const { cache, clock } = newCache(source, config, logger);
    const token = await auth.issueToken("read");
    const hash = TokenCache.hashToken(token);
    const first = await cache.fetch(token, hash);
    expect(first.status).toBe("active");
    await auth.stop();
    return { cache, clock, source, token, hash, warnings, info: (first as { info: TokenInfo }).info };
  }

  it("serves the stale positive entry, retries at most once a second, then answers unavailable", async () => {
    const { cache, clock, source, token, hash, warnings } = await warmThenStop({
      max_ttl_s: 60,
      stale_if_error_s: 30,
    });
    const staleBefore = await counterValue(metrics.tokenCacheLookups, "stale");
    clock.advance(60_000);
    expect(cache.get(hash)).toBeUndefined();
    const served = await cache.fetch(token, hash);
    expect(served).toMatchObject({ status: "active", info: { clientId: "app", scope: ["read"] } });
    expect(source.calls).toBe(2);
    // Within a second the failing source is not asked again.
    clock.advance(999);
    expect((await cache.fetch(token, hash)).status).toBe("active");
    expect(source.calls).toBe(2);
    clock.advance(1);
    expect((await cache.fetch(token, hash)).status).toBe("active");
    expect(source.calls).toBe(3);
    expect(await counterValue(metrics.tokenCacheLookups, "stale")).toBe(staleBefore + 3);
    // Still not fresh: the warm path never returns a stale entry.
    expect(cache.get(hash)).toBeUndefined();
    expect(cache.has(hash)).toBe(false);
    clock.set(clock.nowMs() + 30_000);
    expect(await cache.fetch(token, hash)).toEqual({ status: "unavailable" });
    const unknown = "never-issued-token";
    expect(await cache.fetch(unknown, TokenCache.hashToken(unknown))).toEqual({ status: "unavailable" });
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ level: 40, reason: "network" });
    expect(warnings[0]).not.toContain(token);
    await cache.close();
  });

  it("never serves a stale entry at or past the token's exp", async () => {
    const { cache, clock, token, hash, info } = await warmThenStop({
      max_ttl_s: TOKEN_TTL_S - 10,
      stale_if_error_s: 60,
    });
    const expMs = info.exp! * 1000;
    clock.set(expMs - 1);
    expect((await cache.fetch(token, hash)).status).toBe("active");
    clock.set(expMs);
    expect(await cache.fetch(token, hash)).toEqual({ status: "unavailable" });
    await cache.close();
  });

  it("answers unavailable at once when stale_if_error_s is 0", async () => {
    const { cache, clock, token, hash } = await warmThenStop({ max_ttl_s: 60, stale_if_error_s: 0 });
    clock.advance(60_000);
    expect(await cache.fetch(token, hash)).toEqual({ status: "unavailable" });
    await cache.close();
  });

  it("answers unavailable when the source times out and nothing is cached", async () => {
    const server = http.createServer(() => {});
    const url = await listen(server);
    const { cache } = newCache(newClient(url, GATEWAY_SECRET, 100));
    const lookups = await Promise.all([1, 2, 3].map(() => cache.fetch("t", TokenCache.hashToken("t"))));
    expect(lookups).toEqual([
      { status: "unavailable" },
      { status: "unavailable" },
      { status: "unavailable" },
    ]);
    await cache.close();
    await stopServer(server);
  });
});
