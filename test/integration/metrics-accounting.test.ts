/**
 * SPEC §8 metrics count what happened: after a scripted mix of calls, every family scraped from the
 * admin `/metrics` holds exactly the counts of what was sent (not merely the names). One gateway on
 * static tokens covers requests, durations, rate-limit decisions, authentication, the token cache,
 * upstream errors, in-flight requests and reloads; a second one in front of a real oidc-provider
 * (RFC 7662) covers introspection calls and the token cache's stale and negative answers.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { ManualClock } from "../../gateway/base/clock.js";
import { createLogger } from "../../gateway/observability/logger.js";
import { VERSION } from "../../gateway/base/version.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, REFUSED_PORT, request } from "../helpers/http.js";
import { introspectionAuthConfig, startAuthServer, type AuthServer } from "../helpers/oidc.js";
import { scrape, type Scrape } from "../helpers/prom.js";

const VALID = { authorization: "Bearer valid-token" };

/** How many of each kind of call the script sends. */
const N_READS = 5;
const WRITE_LIMIT = 3;
const M_OVER_LIMIT = 2;
const K_MISSING = 3;
const J_MALFORMED = 2;
const NOT_FOUND = 2;

describe("metrics after a scripted mix of calls (static tokens)", () => {
  let upstream: { server: Server; url: string };
  let slow: { server: Server; url: string };
  let deadUrl: string;
  let gw: TestGateway;
  let slowArrived: () => void = () => {};
  let m: Scrape;
  let duringSlow: Scrape;
  const tmp = mkdtempSync(path.join(tmpdir(), "metrics-accounting-"));

  function config(): Record<string, unknown> {
    return testConfig(upstream.url, {
      upstreams: {
        docs: { url: upstream.url, timeout_ms: 2000 },
        slow: { url: slow.url, timeout_ms: 300 },
        dead: { url: deadUrl, connect_timeout_ms: 500 },
      },
      routes: [
        { prefix: "/v1", upstream: "docs" },
        { prefix: "/slow", upstream: "slow" },
        { prefix: "/dead", upstream: "dead" },
      ],
      rate_limits: {
        classes: {
          read: { match: { methods: ["GET", "HEAD"] }, windows: [{ limit: 100, window_s: 3600 }] },
          write: {
            match: { methods: ["POST", "PUT", "PATCH", "DELETE"] },
            windows: [{ limit: WRITE_LIMIT, window_s: 3600 }],
          },
        },
        anonymous: { windows: [{ limit: 100, window_s: 3600 }] },
      },
    });
  }

  beforeAll(async () => {
    upstream = await listen((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(req.url?.startsWith("/v1/fail") ? 500 : 200, { "content-type": "text/plain" });
        res.end("upstream");
      });
    });
    slow = await listen(() => slowArrived()); // never answers
    // Nothing listens on a port of this worker's own range (a released ephemeral port may be reused).
    deadUrl = `http://127.0.0.1:${REFUSED_PORT}`;
    gw = await startGateway(config());

    const get = (p: string, headers: Record<string, string> = VALID) => request(`${gw.url}${p}`, { headers });
    const statuses: number[] = [];
    const send = async (p: Promise<{ status: number }>) => statuses.push((await p).status);
    // Sequential, so the first use of each token is one cache miss and later uses are hits.
    for (let i = 0; i < N_READS; i++) await send(get("/v1/items"));
    for (let i = 0; i < WRITE_LIMIT + M_OVER_LIMIT; i++) {
      await send(request(`${gw.url}/v1/items`, { method: "POST", headers: VALID, body: "{}" }));
    }
    for (let i = 0; i < K_MISSING; i++) await send(get("/v1/items", {}));
    await send(get("/v1/items", { authorization: "Basic dXNlcjpwYXNz" }));
    await send(get("/v1/items", { authorization: "Bearer two words" }));
    await send(get("/v1/items", { authorization: "Bearer unknown-token" }));
    await send(get("/v1/items", { authorization: "Bearer unknown-token" }));
    await send(get("/v1/items", { authorization: "Bearer inactive-token" }));
    for (let i = 0; i < NOT_FOUND; i++) await send(get("/nowhere/at/all"));
    await send(get("/v1/fail"));
    await send(get("/dead/x"));
    // The slow call is in flight once the upstream sees it: scrape then, before the 504.
    const arrived = new Promise<void>((resolve) => (slowArrived = resolve));
    const slowCall = get("/slow/x");
    await arrived;
    duringSlow = await scrape(gw.adminUrl);
    await send(slowCall);
    expect(statuses).toEqual([
      ...Array<number>(N_READS).fill(200),
      ...Array<number>(WRITE_LIMIT).fill(200),
      ...Array<number>(M_OVER_LIMIT).fill(429),
      ...Array<number>(K_MISSING).fill(401),
      400,
      400,
      401,
      401,
      401,
      ...Array<number>(NOT_FOUND).fill(404),
      500,
      502,
      504,
    ]);
    m = await scrape(gw.adminUrl);
  });

  afterAll(async () => {
    await gw.close();
    await closeServer(upstream.server);
    await closeServer(slow.server);
    rmSync(tmp, { recursive: true, force: true });
  });

  it("counts gateway_requests_total by route, class and code", () => {
    const byLabels = Object.fromEntries(
      m
        .select("gateway_requests_total")
        .map((s) => [`${s.labels.route} ${s.labels.class} ${s.labels.code}`, s.value]),
    );
    expect(byLabels).toEqual({
      "/v1 read 200": N_READS,
      "/v1 write 200": WRITE_LIMIT,
      "/v1 write 429": M_OVER_LIMIT,
      "/v1 anonymous 401": K_MISSING + 3,
      "/v1 anonymous 400": J_MALFORMED,
      "none anonymous 404": NOT_FOUND,
      "/v1 read 500": 1,
      "/dead read 502": 1,
      "/slow read 504": 1,
    });
  });

  it("observes one request duration per request, by route and class", () => {
    const count = (route: string, cls: string) =>
      m.value("gateway_request_duration_seconds_count", { route, class: cls });
    expect(count("/v1", "read")).toBe(N_READS + 1);
    expect(count("/v1", "write")).toBe(WRITE_LIMIT + M_OVER_LIMIT);
    expect(count("/v1", "anonymous")).toBe(K_MISSING + J_MALFORMED + 3);
    expect(count("none", "anonymous")).toBe(NOT_FOUND);
    expect(count("/dead", "read")).toBe(1);
    expect(count("/slow", "read")).toBe(1);
    expect(m.sum("gateway_request_duration_seconds_count")).toBe(m.sum("gateway_requests_total"));
    // The 504 waited for the 300 ms upstream timeout.
    expect(
      m.value("gateway_request_duration_seconds_sum", { route: "/slow", class: "read" }),
    ).toBeGreaterThan(0.29);
  });

  it("observes upstream durations only for upstreams that answered", () => {
    expect(m.value("gateway_upstream_duration_seconds_count", { upstream: "docs" })).toBe(
      N_READS + WRITE_LIMIT + 1,
    );
    expect(m.select("gateway_upstream_duration_seconds_count", { upstream: "dead" })).toEqual([]);
    expect(m.select("gateway_upstream_duration_seconds_count", { upstream: "slow" })).toEqual([]);
  });

  it("counts upstream errors by upstream and reason: connect for the dead one, timeout for the slow one", () => {
    expect(m.select("gateway_upstream_errors_total").map((s) => [s.labels, s.value])).toEqual([
      [{ upstream: "dead", reason: "connect" }, 1],
      [{ upstream: "slow", reason: "timeout" }, 1],
    ]);
  });

  it("counts one rate-limit decision per request, by class and outcome", () => {
    const decisions = Object.fromEntries(
      m
        .select("gateway_ratelimit_decisions_total")
        .map((s) => [`${s.labels.class} ${s.labels.outcome}`, s.value]),
    );
    expect(decisions).toEqual({
      "read allowed": N_READS + 3,
      "write allowed": WRITE_LIMIT,
      "write limited": M_OVER_LIMIT,
      "anonymous allowed": K_MISSING + J_MALFORMED + 3 + NOT_FOUND,
    });
  });

  it("counts one authentication result per call that reached authentication, rate-limited ones included", () => {
    const results = Object.fromEntries(
      m.select("gateway_auth_results_total").map((s) => [s.labels.result, s.value]),
    );
    expect(results).toEqual({
      valid: N_READS + WRITE_LIMIT + M_OVER_LIMIT + 3,
      missing: K_MISSING,
      malformed: J_MALFORMED,
      invalid: 3,
    });
  });

  it("counts token cache lookups: one miss per new token, then hits and negative hits", () => {
    expect(m.value("gateway_token_cache_lookups_total", { result: "miss" })).toBe(3);
    expect(m.value("gateway_token_cache_lookups_total", { result: "hit" })).toBe(
      N_READS + WRITE_LIMIT + M_OVER_LIMIT + 3 - 1,
    );
    expect(m.value("gateway_token_cache_lookups_total", { result: "negative" })).toBe(1);
    expect(m.value("gateway_token_cache_lookups_total", { result: "stale" })).toBe(0);
  });

  it("counts a request in flight while it waits for the upstream, and none once all answered", () => {
    expect(duringSlow.value("gateway_inflight_requests")).toBe(1);
    expect(m.value("gateway_inflight_requests")).toBe(0);
  });

  it("exports gateway_build_info and prom-client's default process metrics", () => {
    expect(m.select("gateway_build_info")).toEqual([
      { name: "gateway_build_info", labels: { version: VERSION, node_version: process.version }, value: 1 },
    ]);
    expect(m.value("process_cpu_seconds_total")).toBeGreaterThan(0);
    expect(m.value("process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(m.value("process_start_time_seconds")).toBeGreaterThan(0);
    expect(m.types.get("nodejs_eventloop_lag_seconds")).toBe("gauge");
    expect(m.select("nodejs_eventloop_lag_seconds")).toHaveLength(1);
    expect(m.value("nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
    expect(m.select("nodejs_version_info")).toHaveLength(1);
  });

  it("counts configuration reloads by result: a valid file succeeds, an invalid one is rejected", async () => {
    const good = path.join(tmp, "good.yaml");
    const bad = path.join(tmp, "bad.yaml");
    writeFileSync(good, stringify(config()));
    writeFileSync(bad, stringify({ ...config(), routes: [{ prefix: "/v1", upstream: "missing" }] }));
    expect(await gw.gateway.reload(good)).toBe(true);
    expect(await gw.gateway.reload(bad)).toBe(false);
    const after = await scrape(gw.adminUrl);
    expect(after.value("gateway_config_reloads_total", { result: "success" })).toBe(1);
    expect(after.value("gateway_config_reloads_total", { result: "error" })).toBe(1);
    // The reload kept the limiter: the write budget spent above is still spent.
    const res = await request(`${gw.url}/v1/items`, { method: "POST", headers: VALID, body: "{}" });
    expect(res.status).toBe(429);
  });
});

describe("introspection metrics in front of a real RFC 7662 server (oidc-provider)", () => {
  let auth: AuthServer;
  let upstream: { server: Server; url: string };
  let gw: TestGateway;
  let m: Scrape;
  const clock = new ManualClock(Date.now());
  const lines: Record<string, unknown>[] = [];
  const OUTAGE_MS = 5_000;

  beforeAll(async () => {
    auth = await startAuthServer();
    upstream = await listen((_req, res) => res.writeHead(200).end("ok"));
    gw = await startGateway(
      testConfig(upstream.url, {
        auth: introspectionAuthConfig(auth, {
          max_entries: 100,
          max_ttl_s: 60,
          negative_ttl_s: 10,
          stale_if_error_s: 60,
        }),
      }),
      {
        clock,
        // A destination may receive several newline-terminated lines per write (access lines).
        logger: createLogger("debug", {
          write: (chunk: string) => {
            for (const l of chunk.split("\n")) if (l !== "") lines.push(JSON.parse(l));
          },
        }),
      },
    );
    const [t1, t2] = await Promise.all([auth.issueToken("read"), auth.issueToken("read")]);
    const call = async (token: string) =>
      (await request(`${gw.url}/v1/user`, { headers: { authorization: `Bearer ${token}` } })).status;
    const statuses: number[] = [];
    // t1: one introspection (miss), then two cache hits.
    for (let i = 0; i < 3; i++) statuses.push(await call(t1));
    // Unknown token: one introspection (inactive, miss), then a negative hit.
    for (let i = 0; i < 2; i++) statuses.push(await call("never-issued-token"));
    // The source goes away (connection refused); t1 is past max_ttl_s but within
    // stale_if_error_s: served stale.
    await auth.stop();
    clock.advance(61_000);
    statuses.push(await call(t1));
    // t2 was never cached: 503.
    statuses.push(await call(t2));
    // The source answers again 5 s later: t2 is introspected and the outage ends.
    clock.advance(OUTAGE_MS);
    await auth.start();
    statuses.push(await call(t2));
    expect(statuses).toEqual([200, 200, 200, 401, 401, 200, 503, 200]);
    m = await scrape(gw.adminUrl);
  });

  afterAll(async () => {
    await gw.close();
    await closeServer(upstream.server);
    await auth.stop();
  });

  it("counts introspection calls by result and observes each one's duration", () => {
    const results = Object.fromEntries(
      m.select("gateway_introspection_requests_total").map((s) => [s.labels.result, s.value]),
    );
    expect(results).toEqual({ active: 2, inactive: 1, error: 2 });
    expect(m.value("gateway_introspection_duration_seconds_count")).toBe(5);
    // The two failed calls never reached the stopped server.
    expect(auth.introspections()).toBe(3);
  });

  it("counts token cache lookups as miss, hit, negative and stale", () => {
    const results = Object.fromEntries(
      m.select("gateway_token_cache_lookups_total").map((s) => [s.labels.result, s.value]),
    );
    expect(results).toEqual({ hit: 2, miss: 4, negative: 1, stale: 1 });
  });

  it("counts authentication results, the 503 as unavailable", () => {
    const results = Object.fromEntries(
      m.select("gateway_auth_results_total").map((s) => [s.labels.result, s.value]),
    );
    expect(results).toEqual({ valid: 5, invalid: 2, unavailable: 1 });
    expect(m.value("gateway_requests_total", { route: "/v1", class: "anonymous", code: "503" })).toBe(1);
  });

  it("logs the introspection outage once when it starts and once, with its duration, when it ends", () => {
    const started = lines.filter((l) => String(l.msg).startsWith("introspection source unavailable"));
    const ended = lines.filter((l) => l.msg === "introspection source answers again");
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({ level: "warn", reason: "network" });
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({ level: "info", outageMs: OUTAGE_MS });
  });
});
