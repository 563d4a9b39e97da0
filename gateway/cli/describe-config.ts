/** Human summary of a configuration, printed by `gateway check`. */
import { tracingSettings } from "../observability/tracing/settings.js";
import type { GatewayConfig } from "../config/schema.js";
import { endpointsOf, type UpstreamConfig } from "../config/upstream-schema.js";

/** `url`, or the endpoints with their weights and the balancer. */
function describeEndpoints(u: UpstreamConfig | undefined): string {
  if (u === undefined) return "?";
  if (u.endpoints === undefined) return u.url ?? "?";
  const list = endpointsOf(u).map((e) => (e.weight === 1 ? e.url : `${e.url} ×${e.weight}`));
  return `${u.balancer}: ${list.join(", ")}`;
}

/** `100/60s + 10000/month`: sliding windows by length, calendar ones by period (SPEC §19). */
const windowsText = (
  ws: readonly { limit: number; window_s?: number | undefined; period?: string }[],
): string => ws.map((w) => `${w.limit}/${w.period ?? `${w.window_s}s`}`).join(" + ");

/**
 * Each plan's effective windows per class (SPEC §10): the plan's own where it names the class,
 * else the class's.
 */
function describePlans(config: GatewayConfig): string[] {
  const rl = config.rate_limits;
  const plans = Object.entries(rl.plans);
  if (plans.length === 0) return ["plans: none (every caller gets the classes' windows)"];
  const order = [
    rl.consumers.length > 0 ? `a consumers entry (${rl.consumers.length})` : undefined,
    rl.plan_claim === undefined ? undefined : `the "${rl.plan_claim}" claim`,
    rl.default_plan === undefined ? "no plan" : `default_plan "${rl.default_plan}"`,
  ].filter((x) => x !== undefined);
  const lines = [`plans (a caller's plan: ${order.join(", then ")}):`];
  for (const [name, overrides] of plans) {
    const counted = rl.consumers.filter((c) => c.plan === name).length;
    const notes = [
      name === rl.default_plan ? "default_plan" : undefined,
      counted > 0 ? `${counted} consumers` : undefined,
    ].filter((x) => x !== undefined);
    lines.push(`  ${name}${notes.length > 0 ? ` (${notes.join(", ")})` : ""}`);
    for (const [cls, c] of Object.entries(rl.classes)) {
      const entry = overrides[cls];
      const own = entry === undefined || Array.isArray(entry) ? entry : entry.windows;
      lines.push(
        `    ${cls.padEnd(12)} ${windowsText(own ?? c.windows).padEnd(20)} ${own === undefined ? "(class)" : "(plan)"}`,
      );
    }
  }
  return lines;
}

/** The API listener (or `off`), the decision listener and its path (SPEC §23), the admin one. */
function describeListeners(config: GatewayConfig): string {
  const l = config.listen;
  const d = config.decision;
  return [
    `api ${l.enabled ? `${l.host}:${l.port}` : "off"}`,
    d === undefined
      ? undefined
      : `decision ${d.listen.host}:${d.listen.port}${d.path}${d.nginx_status ? " (nginx_status)" : ""}`,
    `admin ${config.admin.host}:${config.admin.port}`,
  ]
    .filter((s) => s !== undefined)
    .join(", ");
}

/**
 * @param env - the environment the gateway would start with (`OTEL_*` can turn tracing on)
 * @returns a multi-line text listing routes (longest prefix first), limit classes in match order,
 *   each plan's effective windows, the auth chain, the listeners and where spans go
 */
export function describeConfig(config: GatewayConfig, env: NodeJS.ProcessEnv = process.env): string {
  const lines: string[] = ["routes (longest prefix wins):"];
  const routes = [...config.routes].sort((a, b) => b.prefix.length - a.prefix.length);
  for (const r of routes) {
    const scopes = r.scopes.length > 0 ? `  scopes: ${r.scopes.join(" ")}` : "";
    lines.push(
      `  ${r.prefix.padEnd(24)} -> ${r.upstream} (${describeEndpoints(config.upstreams[r.upstream])})${scopes}`,
    );
  }
  lines.push("limit classes (first match wins):");
  for (const [name, c] of Object.entries(config.rate_limits.classes)) {
    const match = [c.match.methods?.join(",") ?? "any method", c.match.paths?.join(" ") ?? "any path"].join(
      " ",
    );
    const identity = c.identity ?? config.rate_limits.identity;
    lines.push(
      `  ${name.padEnd(12)} ${windowsText(c.windows).padEnd(20)} ${c.algorithm}${c.mode === "shadow" ? " (shadow)" : ""}` +
        `  per ${identity}  match: ${match}`,
    );
    // SPEC §22: shared budgets, and what a call spends.
    for (const b of c.budgets ?? []) lines.push(`    + ${b.key} ${windowsText(b.windows)}`);
    if (c.cost > 1 || c.charge !== undefined) {
      const charge = c.charge === undefined ? "" : ` + ${c.charge.header} (max ${c.charge.max})`;
      lines.push(`    units per call: ${c.cost}${charge}`);
    }
  }
  const anon = windowsText(config.rate_limits.anonymous.windows);
  lines.push(`  ${"anonymous".padEnd(12)} ${anon.padEnd(20)} per client IP`);
  lines.push(...describePlans(config));
  const redis = config.rate_limits.store.redis;
  const store =
    redis === undefined
      ? "memory"
      : redis.cluster
        ? "redis cluster"
        : redis.sentinels
          ? "redis sentinel"
          : "redis";
  lines.push(`store: ${store}, failure_mode: ${config.rate_limits.failure_mode}`);
  const a = config.auth;
  const auth = [
    a.jwt === undefined ? undefined : `jwt (issuer ${a.jwt.issuer})`,
    a.introspection === undefined ? undefined : "introspection",
    a.static === undefined ? undefined : "static tokens",
  ];
  lines.push(`auth: ${auth.filter((s) => s !== undefined).join(" + ")}`);
  lines.push(`listeners: ${describeListeners(config)}`);
  const tracing = tracingSettings(config.tracing, env);
  lines.push(
    tracing === null
      ? "tracing: off"
      : `tracing: ${tracing.endpoint}, sample_ratio ${tracing.sampleRatio}, service ${tracing.serviceName}`,
  );
  return lines.join("\n");
}
