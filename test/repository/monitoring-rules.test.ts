/**
 * config/monitoring: the Prometheus alert rules and the Grafana dashboard (issue "Observability",
 * SPEC §8).
 *
 * - `promtool check rules` accepts the alert rules, and every dashboard expression parses as PromQL;
 * - `promtool test rules` shows the main alerts firing on synthetic series (and staying quiet on
 *   healthy ones), so a wrong label value or operator cannot pass unnoticed;
 * - every metric, label and enumerated label value the rules and the dashboard use is one the
 *   gateway registers (gateway/observability/metrics.ts).
 *
 * promtool comes from Debian's `prometheus` package (`.ci/run` installs it). Without it the promtool
 * tests are skipped locally and fail under CI (`CI` set).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import { parse, stringify } from "yaml";
import { PRIORITIES, type Priority } from "../../gateway/config/shedding-schema.js";
import { createMetrics } from "../../gateway/observability/metrics.js";
import {
  type AuthResult,
  type CacheLookup,
  type DecisionOutcome,
  type JwksFetchResult,
  type JwtValidationResult,
  type SpanDropReason,
  type UpstreamErrorReason,
  type WebhookDeliveryResult,
} from "../../gateway/base/results.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const RULES_FILE = path.join(ROOT, "config/monitoring/alerts.yaml");
const DASHBOARD_FILE = path.join(ROOT, "config/monitoring/grafana-dashboard.json");

interface AlertRule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleFile {
  groups: { name: string; interval?: string; rules: AlertRule[] }[];
}

const rules = parse(readFileSync(RULES_FILE, "utf8")) as RuleFile;
const dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, "utf8")) as Record<string, unknown>;
const alerts = rules.groups.flatMap((g) => g.rules).filter((r) => r.alert !== undefined);

/** Every PromQL expression in the dashboard: panel and annotation `expr`, variable queries. */
function dashboardExpressions(): { promql: string[]; variableQueries: string[] } {
  const promql: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach(walk);
    } else if (node !== null && typeof node === "object") {
      for (const [key, value] of Object.entries(node)) {
        if (key === "expr" && typeof value === "string") promql.push(value);
        else if (key !== "templating") walk(value);
      }
    }
  };
  walk(dashboard);
  const variables = ((dashboard.templating as { list?: unknown[] } | undefined)?.list ?? []) as {
    type: string;
    query?: string | { query?: string };
  }[];
  const variableQueries = variables
    .filter((v) => v.type === "query")
    .map((v) => (typeof v.query === "string" ? v.query : (v.query?.query ?? "")));
  return { promql, variableQueries };
}

const { promql: dashboardPromql, variableQueries } = dashboardExpressions();

// ---------------------------------------------------------------------------------------------
// promtool

function findPromtool(): boolean {
  const r = spawnSync("promtool", ["--version"], { encoding: "utf8" });
  return r.error === undefined && r.status === 0;
}
const hasPromtool = findPromtool();

function requirePromtool(ctx: TestContext): void {
  if (hasPromtool) return;
  if (process.env.CI) {
    throw new Error("promtool is not on PATH; CI must install it (Debian package `prometheus`)");
  }
  console.warn("monitoring-rules: promtool not on PATH, skipping (apt-get install prometheus to run it)");
  ctx.skip("promtool not on PATH (Debian package `prometheus`); required when CI is set");
}

function promtool(...args: string[]): { status: number | null; output: string } {
  const r = spawnSync("promtool", args, { encoding: "utf8", timeout: 60_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

let tmp = "";
beforeAll(() => {
  tmp = mkdtempSync(path.join(tmpdir(), "gateway-monitoring-"));
});
afterAll(() => {
  if (tmp !== "") rmSync(tmp, { recursive: true, force: true });
});

/** Grafana's template variables replaced so that promtool can parse the expression. */
function substituteGrafanaVariables(expr: string): string {
  return expr
    .replaceAll("$__rate_interval", "5m")
    .replaceAll("$__interval", "1m")
    .replaceAll("$__range", "1h")
    .replace(/\$\{?(job|route|class|instance|plan)\}?/g, ".*");
}

/**
 * One synthetic scenario per alert: input series (1 m apart) and when the alert must and must not
 * fire. Annotations are stripped from the rules under test, so only labels are compared.
 */
function ruleTests(): unknown {
  const g = { job: "gateway", instance: "gw-0:9090" };
  const sel = (name: string, labels: Record<string, string>): string =>
    `${name}{${Object.entries({ ...g, ...labels })
      .map(([k, v]) => `${k}="${v}"`)
      .join(",")}}`;
  return {
    rule_files: ["rules.yaml"],
    evaluation_interval: "1m",
    tests: [
      {
        interval: "1m",
        input_series: [
          // 10% of answers are 502 on `gateway`; 1% are 500 on `quiet`.
          {
            series: sel("gateway_requests_total", { route: "/v1", class: "read", code: "200" }),
            values: "0+90x30",
          },
          {
            series: sel("gateway_requests_total", { route: "/v1", class: "read", code: "502" }),
            values: "0+10x30",
          },
          {
            series: sel("gateway_requests_total", { job: "quiet", route: "/v1", class: "read", code: "200" }),
            values: "0+99x30",
          },
          {
            series: sel("gateway_requests_total", { job: "quiet", route: "/v1", class: "read", code: "500" }),
            values: "0+1x30",
          },
          // Critical calls shed from minute 10; sheddable ones all along (the feature working).
          {
            series: sel("gateway_upstream_overloaded_total", { upstream: "docs", priority: "critical" }),
            values: "0x9 0+5x20",
          },
          {
            series: sel("gateway_upstream_overloaded_total", { upstream: "docs", priority: "sheddable" }),
            values: "0+100x30",
          },
          // The store fails from minute 5.
          { series: sel("gateway_ratelimit_store_degraded", {}), values: "0x4 1x25" },
          {
            series: sel("gateway_ratelimit_decisions_total", { class: "read", outcome: "degraded" }),
            values: "0x4 0+30x25",
          },
          // 10% of introspection calls fail.
          { series: sel("gateway_introspection_requests_total", { result: "active" }), values: "0+90x30" },
          { series: sel("gateway_introspection_requests_total", { result: "error" }), values: "0+10x30" },
          // Every request takes between 0.5 and 1 s.
          {
            series: sel("gateway_request_duration_seconds_bucket", {
              route: "/v1",
              class: "read",
              le: "0.5",
            }),
            values: "0x30",
          },
          {
            series: sel("gateway_request_duration_seconds_bucket", { route: "/v1", class: "read", le: "1" }),
            values: "0+100x30",
          },
          {
            series: sel("gateway_request_duration_seconds_bucket", {
              route: "/v1",
              class: "read",
              le: "+Inf",
            }),
            values: "0+100x30",
          },
          // Upstream `docs` never answers (no duration series at all); `api` fails 0.5%.
          {
            series: sel("gateway_upstream_errors_total", { upstream: "docs", reason: "connect" }),
            values: "0+5x30",
          },
          {
            series: sel("gateway_upstream_errors_total", { upstream: "api", reason: "timeout" }),
            values: "0+1x30",
          },
          { series: sel("gateway_upstream_duration_seconds_count", { upstream: "api" }), values: "0+199x30" },
          // Pool `pool`: endpoint 10.0.0.1 fails every try it gets (ejected most of the time) from
          // minute 5, while 10.0.0.2 serves; pool `down`: its only endpoint fails (the pool too).
          ...[
            { upstream: "pool", endpoint: "10.0.0.1:3000", requests: "0x4 0+5x25", errors: "0x4 0+5x25" },
            { upstream: "pool", endpoint: "10.0.0.2:3000", requests: "0+1000x30", errors: "0x30" },
            { upstream: "down", endpoint: "10.0.0.3:3000", requests: "0+10x30", errors: "0+10x30" },
          ].flatMap(({ upstream, endpoint, requests, errors }) => [
            {
              series: sel("gateway_upstream_endpoint_requests_total", { upstream, endpoint }),
              values: requests,
            },
            {
              series: sel("gateway_upstream_endpoint_errors_total", {
                upstream,
                endpoint,
                reason: "connect",
              }),
              values: errors,
            },
          ]),
          // Plan claims naming no configured plan from minute 5 on `gateway`; one stray call on `quiet`.
          { series: sel("gateway_plan_claim_unknown_total", {}), values: "0x4 0+6x25" },
          { series: sel("gateway_plan_claim_unknown_total", { job: "quiet" }), values: "0x9 1x20" },
          // One rejected reload at minute 3.
          { series: sel("gateway_config_reloads_total", { result: "error" }), values: "0 0 0 1x27" },
          // Spans dropped for a full queue from minute 5 on; a burst of failed exports at minutes 4-5.
          {
            series: sel("gateway_tracing_spans_dropped_total", { reason: "queue_full" }),
            values: "0x4 0+50x25",
          },
          {
            series: sel("gateway_tracing_spans_dropped_total", { reason: "export_failed" }),
            values: "0x3 100 200x25",
          },
          // Deliveries keep succeeding; one is dropped at minute 6 (queue full).
          { series: sel("gateway_webhook_deliveries_total", { result: "delivered" }), values: "0+5x29" },
          { series: sel("gateway_webhook_deliveries_total", { result: "dropped" }), values: "0x5 1x24" },
        ],
        alert_rule_test: [
          { eval_time: "2m", alertname: "GatewayRateLimitStoreFailingOpen", exp_alerts: [] },
          {
            eval_time: "8m",
            alertname: "GatewayRateLimitStoreFailingOpen",
            exp_alerts: [{ exp_labels: { severity: "warning", ...g } }],
          },
          { eval_time: "3m", alertname: "GatewayHigh5xxRatio", exp_alerts: [] },
          {
            eval_time: "12m",
            alertname: "GatewayHigh5xxRatio",
            exp_alerts: [{ exp_labels: { severity: "critical", job: "gateway" } }],
          },
          {
            eval_time: "12m",
            alertname: "GatewayIntrospectionFailures",
            exp_alerts: [{ exp_labels: { severity: "warning", job: "gateway" } }],
          },
          { eval_time: "8m", alertname: "GatewayHighLatencyP99", exp_alerts: [] },
          {
            eval_time: "20m",
            alertname: "GatewayHighLatencyP99",
            exp_alerts: [{ exp_labels: { severity: "warning", job: "gateway" } }],
          },
          {
            eval_time: "12m",
            alertname: "GatewayUpstreamErrors",
            exp_alerts: [{ exp_labels: { severity: "warning", job: "gateway", upstream: "docs" } }],
          },
          { eval_time: "12m", alertname: "GatewayUpstreamEndpointFailing", exp_alerts: [] },
          {
            eval_time: "20m",
            alertname: "GatewayUpstreamEndpointFailing",
            exp_alerts: [
              {
                exp_labels: {
                  severity: "warning",
                  job: "gateway",
                  upstream: "pool",
                  endpoint: "10.0.0.1:3000",
                },
              },
            ],
          },
          { eval_time: "2m", alertname: "GatewayConfigReloadFailed", exp_alerts: [] },
          {
            eval_time: "6m",
            alertname: "GatewayConfigReloadFailed",
            exp_alerts: [{ exp_labels: { severity: "warning", ...g, result: "error" } }],
          },
          { eval_time: "25m", alertname: "GatewayConfigReloadFailed", exp_alerts: [] },
          { eval_time: "12m", alertname: "GatewayPlanClaimUnknown", exp_alerts: [] },
          {
            eval_time: "25m",
            alertname: "GatewayPlanClaimUnknown",
            exp_alerts: [{ exp_labels: { severity: "warning", job: "gateway" } }],
          },
          { eval_time: "12m", alertname: "GatewayCriticalTrafficShed", exp_alerts: [] },
          {
            eval_time: "20m",
            alertname: "GatewayCriticalTrafficShed",
            exp_alerts: [{ exp_labels: { severity: "critical", job: "gateway", upstream: "docs" } }],
          },
          { eval_time: "5m", alertname: "GatewayWebhookDeliveriesLost", exp_alerts: [] },
          {
            eval_time: "10m",
            alertname: "GatewayWebhookDeliveriesLost",
            exp_alerts: [{ exp_labels: { severity: "warning", job: "gateway", result: "dropped" } }],
          },
          // The drop has left the 15-minute window.
          { eval_time: "25m", alertname: "GatewayWebhookDeliveriesLost", exp_alerts: [] },
          // The burst's rate has been above 0 for 5 minutes, the queue's for 3: both only pending.
          { eval_time: "9m", alertname: "GatewayTracingSpansDropped", exp_alerts: [] },
          {
            // The burst's rate fell back to 0 before 10 minutes.
            eval_time: "20m",
            alertname: "GatewayTracingSpansDropped",
            exp_alerts: [{ exp_labels: { severity: "warning", job: "gateway", reason: "queue_full" } }],
          },
        ],
      },
    ],
  };
}

describe("config/monitoring with promtool", () => {
  it("`promtool check rules` accepts alerts.yaml", (ctx) => {
    requirePromtool(ctx);
    const r = promtool("check", "rules", RULES_FILE);
    expect(r.output).toMatch(/SUCCESS/);
    expect(r.status, r.output).toBe(0);
  });

  it("every dashboard expression is valid PromQL", (ctx) => {
    requirePromtool(ctx);
    expect(dashboardPromql.length).toBeGreaterThan(10);
    const file = path.join(tmp, "dashboard-exprs.yaml");
    const recorded = dashboardPromql.map((expr, i) => ({
      record: `dashboard:expr_${i}`,
      expr: substituteGrafanaVariables(expr),
    }));
    writeFileSync(file, stringify({ groups: [{ name: "dashboard", rules: recorded }] }));
    const r = promtool("check", "rules", file);
    expect(r.status, r.output).toBe(0);
  });

  it("the alerts fire on failing series and stay quiet on healthy ones (`promtool test rules`)", (ctx) => {
    requirePromtool(ctx);
    const stripped: RuleFile = {
      groups: rules.groups.map((group) => ({
        ...group,
        rules: group.rules.map(({ annotations: _annotations, ...rule }) => rule),
      })),
    };
    writeFileSync(path.join(tmp, "rules.yaml"), stringify(stripped));
    writeFileSync(path.join(tmp, "rules.test.yaml"), stringify(ruleTests()));
    const r = promtool("test", "rules", path.join(tmp, "rules.test.yaml"));
    expect(r.status, r.output).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------
// Names, labels and values against the registry

/** Label values a rule or panel may select; `satisfies` ties them to metrics.ts's types. */
const ENUMERATED: Record<string, Record<string, readonly string[]>> = {
  gateway_ratelimit_decisions_total: {
    outcome: ["allowed", "limited", "shadow_limited", "degraded"] satisfies readonly DecisionOutcome[],
  },
  gateway_auth_results_total: {
    result: [
      "valid",
      "missing",
      "malformed",
      "invalid",
      "insufficient_scope",
      "unavailable",
      "limited",
    ] satisfies readonly AuthResult[],
  },
  gateway_token_cache_lookups_total: {
    result: ["hit", "miss", "negative", "stale"] satisfies readonly CacheLookup[],
  },
  gateway_upstream_errors_total: {
    reason: ["connect", "timeout", "reset"] satisfies readonly UpstreamErrorReason[],
  },
  gateway_upstream_endpoint_errors_total: {
    reason: ["connect", "timeout", "reset"] satisfies readonly UpstreamErrorReason[],
  },
  gateway_upstream_overloaded_total: { priority: [...PRIORITIES] satisfies readonly Priority[] },
  gateway_introspection_requests_total: { result: ["active", "inactive", "error"] },
  gateway_jwt_validations_total: {
    result: [
      "valid",
      "malformed",
      "algorithm",
      "bad_signature",
      "expired",
      "claims",
      "unknown_key",
      "unavailable",
    ] satisfies readonly JwtValidationResult[],
  },
  gateway_jwks_fetches_total: { result: ["success", "error"] satisfies readonly JwksFetchResult[] },
  gateway_config_reloads_total: { result: ["success", "error"] },
  gateway_tracing_spans_dropped_total: {
    reason: ["queue_full", "export_failed"] satisfies readonly SpanDropReason[],
  },
  gateway_webhook_deliveries_total: {
    result: ["delivered", "retried", "failed", "dropped"] satisfies readonly WebhookDeliveryResult[],
  },
};

/** Labels Prometheus adds at scrape time, and `le` on histogram buckets. */
const TARGET_LABELS = ["job", "instance"];
const METRIC_NAME = /\b(?:gateway|process|nodejs)_[a-z0-9_]*[a-z0-9]\b/g;
const HISTOGRAM_SERIES = /_(bucket|sum|count)$/;

interface Family {
  type: string;
  labelNames: readonly string[];
}

async function registeredFamilies(): Promise<Map<string, Family>> {
  const registry = new Registry();
  createMetrics(registry, "test");
  const families = new Map<string, Family>();
  for (const m of await registry.getMetricsAsJSON()) {
    const metric = registry.getSingleMetric(m.name) as unknown as { labelNames?: unknown };
    const labelNames = Array.isArray(metric.labelNames) ? (metric.labelNames as string[]) : [];
    families.set(m.name, { type: String(m.type), labelNames });
  }
  return families;
}

/** Resolves a series name (`x_bucket` of histogram `x`) to its family, with the labels it carries. */
function resolve(
  families: Map<string, Family>,
  series: string,
): { family: string; labels: string[] } | undefined {
  const direct = families.get(series);
  if (direct !== undefined) return { family: series, labels: [...direct.labelNames, ...TARGET_LABELS] };
  const suffix = HISTOGRAM_SERIES.exec(series);
  if (suffix === null) return undefined;
  const base = series.slice(0, suffix.index);
  const family = families.get(base);
  if (family === undefined || family.type !== "histogram") return undefined;
  const labels = [...family.labelNames, ...TARGET_LABELS, ...(suffix[1] === "bucket" ? ["le"] : [])];
  return { family: base, labels };
}

interface Use {
  where: string;
  expr: string;
}

const uses: Use[] = [
  ...alerts.map((a) => ({ where: `alerts.yaml ${a.alert ?? ""}`, expr: a.expr })),
  ...dashboardPromql.map((expr) => ({ where: "grafana-dashboard.json", expr })),
  ...variableQueries.map((expr) => ({ where: "grafana-dashboard.json variable", expr })),
];

describe("config/monitoring against the gateway's metrics", () => {
  let families: Map<string, Family>;
  beforeAll(async () => {
    families = await registeredFamilies();
  });

  it("uses only metric families the gateway registers", () => {
    const unknown: string[] = [];
    for (const { where, expr } of uses) {
      for (const name of expr.match(METRIC_NAME) ?? []) {
        if (resolve(families, name) === undefined) unknown.push(`${where}: ${name}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  it("selects only labels those families carry, and only label values the gateway emits", () => {
    const problems: string[] = [];
    const selector = /\b((?:gateway|process|nodejs)_[a-z0-9_]*[a-z0-9])\s*\{([^}]*)\}/g;
    const matcher = /([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"/g;
    for (const { where, expr } of uses) {
      for (const [, name = "", body = ""] of expr.matchAll(selector)) {
        const resolved = resolve(families, name);
        if (resolved === undefined) continue; // reported by the test above
        for (const [, label = "", op = "", value = ""] of body.matchAll(matcher)) {
          if (!resolved.labels.includes(label)) problems.push(`${where}: ${name} has no label ${label}`);
          const allowed = ENUMERATED[resolved.family]?.[label];
          if (allowed === undefined || value.includes("$") || (op !== "=" && op !== "=~")) continue;
          for (const alternative of value.split("|")) {
            if (!allowed.includes(alternative)) {
              problems.push(
                `${where}: ${name}{${label}="${alternative}"} is never emitted (${allowed.join(", ")})`,
              );
            }
          }
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("groups only by labels the aggregated family carries", () => {
    const problems: string[] = [];
    // `sum by (a, b) (rate(metric{...}[5m]))` and `max by (a) (metric{...})`
    const grouping =
      /\bby\s*\(([^)]*)\)\s*\(\s*(?:(?:rate|irate|increase|changes)\s*\(\s*)?((?:gateway|process|nodejs)_[a-z0-9_]*[a-z0-9])\b/g;
    for (const { where, expr } of uses) {
      for (const [, by = "", name = ""] of expr.matchAll(grouping)) {
        const resolved = resolve(families, name);
        if (resolved === undefined) continue;
        for (const label of by.split(",").map((l) => l.trim())) {
          if (label !== "" && !resolved.labels.includes(label)) {
            problems.push(`${where}: by (${label}) over ${name}, which has ${resolved.labels.join(", ")}`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("has the alerts the runbook documents, each with a summary, description, runbook and severity", () => {
    const names = alerts.map((a) => a.alert);
    expect(names).toEqual(
      expect.arrayContaining([
        "GatewayHigh5xxRatio",
        "GatewayRateLimitStoreFailingOpen",
        "GatewayIntrospectionFailures",
        "GatewayHighLatencyP99",
        "GatewayUpstreamErrors",
        "GatewayUpstreamEndpointFailing",
        "GatewayConfigReloadFailed",
        "GatewayPlanClaimUnknown",
        "GatewayTracingSpansDropped",
      ]),
    );
    const readme = readFileSync(path.join(ROOT, "config/monitoring/README.md"), "utf8");
    for (const a of alerts) {
      expect(a.annotations?.summary, `${a.alert} summary`).toBeTruthy();
      expect(a.annotations?.description, `${a.alert} description`).toBeTruthy();
      expect(a.labels?.severity, `${a.alert} severity`).toMatch(/^(critical|warning|info)$/);
      const anchor = `#${(a.alert ?? "").toLowerCase()}`;
      expect(a.annotations?.runbook, `${a.alert} runbook`).toBe(`config/monitoring/README.md${anchor}`);
      expect(readme, `README section for ${a.alert}`).toMatch(new RegExp(`^#+ ${a.alert}\\s*$`, "m"));
    }
  });

  it("the dashboard imports with a Prometheus datasource input and covers every family the issue lists", () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    const inputs = dashboard.__inputs as { name: string; type: string; pluginId: string }[];
    expect(inputs).toContainEqual(
      expect.objectContaining({ name: "DS_PROMETHEUS", type: "datasource", pluginId: "prometheus" }),
    );
    const text = JSON.stringify(dashboard);
    const datasources = [...text.matchAll(/"datasource":\{"type":"([^"]*)","uid":"([^"]*)"\}/g)];
    expect(datasources.length).toBeGreaterThan(10);
    for (const [, type, uid] of datasources) {
      // Everything queries the imported Prometheus, except Grafana's built-in annotations.
      if (type === "grafana") expect(uid).toBe("-- Grafana --");
      else expect({ type, uid }).toEqual({ type: "prometheus", uid: "${DS_PROMETHEUS}" });
    }

    const panels = (dashboard.panels as { id: number; type: string; title: string }[]).filter(
      (p) => p.type !== "row",
    );
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    const all = dashboardPromql.join("\n");
    for (const needle of [
      "gateway_requests_total",
      "gateway_request_duration_seconds_bucket",
      "gateway_upstream_duration_seconds_bucket",
      'code="429"',
      'outcome="limited"',
      'outcome="shadow_limited"',
      'outcome="degraded"',
      "gateway_ratelimit_store_degraded",
      "gateway_token_cache_lookups_total",
      "gateway_introspection_requests_total",
      "gateway_introspection_duration_seconds_bucket",
      "gateway_ratelimit_store_errors_total",
      "gateway_ratelimit_store_duration_seconds_bucket",
      "gateway_upstream_errors_total",
      "gateway_config_reloads_total",
      "gateway_plan_claim_unknown_total",
      'plan=~"$plan"',
      "gateway_jwt_validations_total",
      "gateway_jwks_fetches_total",
      "gateway_upstream_endpoint_duration_seconds_bucket",
    ]) {
      expect(all, needle).toContain(needle);
    }
  });
});
