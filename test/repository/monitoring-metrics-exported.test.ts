/**
 * Every metric the shipped Grafana dashboard and Prometheus alert rules query
 * (config/monitoring/) is exported by a running gateway: a real gateway with a Redis limit store
 * and a real IdP (oidc-provider) for RFC 7662 introspection and JWT access tokens is exercised until its labelled
 * families have samples, then its admin `/metrics` is scraped. A name counts as exported when the
 * scrape has its `# TYPE` line (`x_bucket`, `x_sum`, `x_count` resolve to histogram `x`);
 * monitoring-rules.test.ts checks the same names, labels and values against the registry
 * statically, this test against what a live process serves.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, REFUSED_PORT, request } from "../helpers/http.js";
import { jwtAuthConfig, signingKey, startJwtIdp, type JwtIdp } from "../helpers/jwt-idp.js";
import { scrape, type Scrape } from "../helpers/prom.js";
import { RedisServer } from "../helpers/redis-server.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const METRIC_NAME = /\b(?:gateway|process|nodejs)_[a-z0-9_]*[a-z0-9]\b/g;
const SERIES_SUFFIX = /_(bucket|sum|count)$/;
/**
 * Families that only get samples when something fails that this test leaves healthy (Redis; span
 * export, with tracing off here; an upstream's concurrency limit, which this one does not have, and
 * the calls it sheds; webhook deliveries, with no `notifications` here), with their type.
 */
const ONLY_ON_FAILURE = new Map([
  ["gateway_ratelimit_store_errors_total", "counter"],
  ["gateway_tracing_spans_dropped_total", "counter"],
  ["gateway_upstream_overloaded_total", "counter"],
  ["gateway_upstream_concurrency_limit", "gauge"],
  ["gateway_webhook_deliveries_total", "counter"],
]);

/** Every PromQL expression in alerts.yaml and the dashboard (panels, annotations, variables). */
function monitoringExpressions(): { where: string; expr: string }[] {
  const out: { where: string; expr: string }[] = [];
  const rules = parse(readFileSync(path.join(ROOT, "config/monitoring/alerts.yaml"), "utf8")) as {
    groups: { rules: { alert?: string; record?: string; expr: string }[] }[];
  };
  for (const r of rules.groups.flatMap((g) => g.rules)) {
    out.push({ where: `alerts.yaml ${r.alert ?? r.record ?? ""}`, expr: r.expr });
  }
  const dashboard: unknown = JSON.parse(
    readFileSync(path.join(ROOT, "config/monitoring/grafana-dashboard.json"), "utf8"),
  );
  const walk = (node: unknown, where: string): void => {
    if (Array.isArray(node)) return node.forEach((n) => walk(n, where));
    if (node === null || typeof node !== "object") return;
    const obj = node as Record<string, unknown>;
    const here = typeof obj.title === "string" ? `grafana-dashboard.json "${obj.title}"` : where;
    for (const [key, value] of Object.entries(obj)) {
      if ((key === "expr" || key === "query" || key === "definition") && typeof value === "string") {
        out.push({ where: here, expr: value });
      } else {
        walk(value, here);
      }
    }
  };
  walk(dashboard, "grafana-dashboard.json");
  return out;
}

/** The exported family a series name belongs to, or undefined. */
function familyOf(m: Scrape, name: string): string | undefined {
  if (m.types.has(name)) return name;
  const suffix = SERIES_SUFFIX.exec(name);
  if (suffix === null) return undefined;
  const base = name.slice(0, suffix.index);
  const type = m.types.get(base);
  return type === "histogram" || type === "summary" ? base : undefined;
}

describe("metrics used by config/monitoring, against a running gateway", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "monitoring-exported-"));
  let redis: RedisServer;
  let auth: JwtIdp;
  let upstream: { server: Server; url: string };
  let gw: TestGateway;
  let m: Scrape;

  beforeAll(async () => {
    [redis, auth, upstream] = await Promise.all([
      RedisServer.start(),
      signingKey("monitoring").then((key) => startJwtIdp([key])),
      listen((req, res) => {
        req.resume();
        res.writeHead(200).end("ok");
      }),
    ]);
    // Nothing listens on a port of this worker's own range (a released ephemeral port may be reused).
    const dead = { url: `http://127.0.0.1:${REFUSED_PORT}` };
    const config = testConfig(upstream.url, {
      upstreams: { docs: { url: upstream.url }, dead: { url: dead.url, connect_timeout_ms: 500 } },
      routes: [
        { prefix: "/v1", upstream: "docs" },
        { prefix: "/dead", upstream: "dead" },
      ],
      auth: jwtAuthConfig(auth, {}, true),
      rate_limits: {
        // A loaded CI machine must not turn a slow Redis answer into a failover decision here.
        store: { redis: { url: redis.url, key_prefix: "monitoring-exported", command_timeout_ms: 2000 } },
        classes: {
          read: { match: { methods: ["GET"] }, windows: [{ limit: 100, window_s: 3600 }] },
          write: { windows: [{ limit: 1, window_s: 3600 }] },
        },
      },
    });
    gw = await startGateway(config);
    const token = await auth.issueOpaque("read write");
    const jwt = await auth.issueJwt("read");
    const call = async (target: string, method = "GET", authorization: string | null = `Bearer ${token}`) =>
      (
        await request(`${gw.url}${target}`, {
          method,
          headers: authorization === null ? {} : { authorization },
        })
      ).status;
    const statuses = [
      await call("/v1/a"),
      await call("/v1/a"),
      await call("/v1/a", "POST"),
      await call("/v1/a", "POST"),
      await call("/v1/a", "GET", "Bearer not-a-real-token"),
      await call("/v1/a", "GET", `Bearer ${jwt}`),
      await call("/v1/a", "GET", null),
      await call("/nowhere"),
      await call("/dead/a"),
    ];
    expect(statuses).toEqual([200, 200, 200, 429, 401, 200, 401, 404, 502]);
    const good = path.join(dir, "good.yaml");
    const bad = path.join(dir, "bad.yaml");
    writeFileSync(good, stringify(config));
    writeFileSync(bad, stringify({ ...config, upstreams: {} }));
    expect(await gw.gateway.reload(good)).toBe(true);
    expect(await gw.gateway.reload(bad)).toBe(false);
    m = await scrape(gw.adminUrl);
  });

  afterAll(async () => {
    await gw.close();
    await Promise.all([closeServer(upstream.server), auth.stop(), redis.destroy()]);
    rmSync(dir, { recursive: true, force: true });
  });

  const uses = monitoringExpressions();

  it("finds the dashboard's and the rules' expressions", () => {
    expect(uses.filter((u) => u.where.startsWith("alerts.yaml")).length).toBeGreaterThanOrEqual(6);
    expect(uses.filter((u) => u.where.startsWith("grafana-dashboard.json")).length).toBeGreaterThan(20);
  });

  it("exports every metric name they use", () => {
    const missing: string[] = [];
    const names = new Set<string>();
    for (const { where, expr } of uses) {
      for (const name of expr.match(METRIC_NAME) ?? []) {
        names.add(name);
        if (familyOf(m, name) === undefined) missing.push(`${where}: ${name}`);
      }
    }
    expect(names.size).toBeGreaterThan(15);
    expect(missing).toEqual([]);
  });

  it("has samples for every family they use, once the gateway has served traffic", () => {
    const empty = new Set<string>();
    for (const { expr } of uses) {
      for (const name of expr.match(METRIC_NAME) ?? []) {
        const family = familyOf(m, name);
        if (family === undefined || ONLY_ON_FAILURE.has(family)) continue;
        const series = m.types.get(family) === "histogram" ? `${family}_count` : family;
        if (m.select(series).length === 0) empty.add(family);
      }
    }
    expect([...empty]).toEqual([]);
    for (const [family, type] of ONLY_ON_FAILURE) expect(m.types.get(family), family).toBe(type);
  });
});
