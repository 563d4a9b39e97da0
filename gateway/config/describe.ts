/** Human summary of a configuration, printed by `gateway check`. */
import type { GatewayConfig } from "./schema.js";

/** @returns a multi-line text listing routes (longest prefix first) and limit classes in match order */
export function describeConfig(config: GatewayConfig): string {
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
  const a = config.auth;
  const auth = [
    a.jwt === undefined ? undefined : `jwt (issuer ${a.jwt.issuer})`,
    a.introspection === undefined ? undefined : "introspection",
    a.static === undefined ? undefined : "static tokens",
  ];
  lines.push(`auth: ${auth.filter((s) => s !== undefined).join(" + ")}`);
  return lines.join("\n");
}
