/** Human summary of a configuration, printed by `gateway check`. */
import { tracingSettings } from "../observability/tracing/settings.js";
import type { GatewayConfig } from "./schema.js";

/**
 * @param env - the environment the gateway would start with (`OTEL_*` can turn tracing on)
 * @returns a multi-line text listing routes (longest prefix first) and limit classes in match order
 */
export function describeConfig(config: GatewayConfig, env: NodeJS.ProcessEnv = process.env): string {
  const lines: string[] = ["routes (longest prefix wins):"];
  const routes = [...config.routes].sort((a, b) => b.prefix.length - a.prefix.length);
  for (const r of routes) {
    const scopes = r.scopes.length > 0 ? `  scopes: ${r.scopes.join(" ")}` : "";
    lines.push(`  ${r.prefix.padEnd(24)} -> ${r.upstream} (${config.upstreams[r.upstream]?.url})${scopes}`);
  }
  lines.push("limit classes (first match wins):");
  for (const [name, c] of Object.entries(config.rate_limits.classes)) {
    const match = [c.match.methods?.join(",") ?? "any method", c.match.paths?.join(" ") ?? "any path"].join(
      " ",
    );
    const windows = c.windows.map((w) => `${w.limit}/${w.window_s}s`).join(" + ");
    lines.push(
      `  ${name.padEnd(12)} ${windows.padEnd(20)} ${c.algorithm}${c.mode === "shadow" ? " (shadow)" : ""}  match: ${match}`,
    );
  }
  const anon = config.rate_limits.anonymous.windows.map((w) => `${w.limit}/${w.window_s}s`).join(" + ");
  lines.push(`  ${"anonymous".padEnd(12)} ${anon.padEnd(20)} by client IP`);
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
  lines.push(`auth: ${config.auth.introspection ? "introspection" : "static tokens"}`);
  const tracing = tracingSettings(config.tracing, env);
  lines.push(
    tracing === null
      ? "tracing: off"
      : `tracing: ${tracing.endpoint}, sample_ratio ${tracing.sampleRatio}, service ${tracing.serviceName}`,
  );
  return lines.join("\n");
}
