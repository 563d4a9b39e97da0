/**
 * The sections of a document the schema refused as a whole that are valid by themselves, so the
 * files they name are still checked in the same pass (issue 27: `gateway check` reported the
 * schema's problems, then the references', then the files' in three runs).
 */
import type { z } from "zod";
import { gatewayConfigSchema, type GatewayConfig } from "./schema.js";

/**
 * @param raw - the interpolated document
 * @returns a configuration holding the valid ones of `listen`, `auth`, `rate_limits` and each
 *   valid entry of `upstreams` (the sections that name files); the others are empty. Only for
 *   checks that read those sections.
 */
export function validSections(raw: unknown): GatewayConfig {
  const doc = raw !== null && typeof raw === "object" ? (raw as Record<string, unknown>) : {};
  const shape = gatewayConfigSchema.shape;
  const section = (key: "listen" | "auth" | "rate_limits"): unknown => {
    const r = (shape[key] as z.ZodType).safeParse(doc[key]);
    return r.success ? r.data : {};
  };
  const upstreams: Record<string, unknown> = {};
  const entry = (shape.upstreams as unknown as { valueType: z.ZodType }).valueType;
  if (doc.upstreams !== null && typeof doc.upstreams === "object") {
    for (const [name, u] of Object.entries(doc.upstreams)) {
      const r = entry.safeParse(u);
      if (r.success) upstreams[name] = r.data;
    }
  }
  return {
    listen: section("listen"),
    auth: section("auth"),
    rate_limits: section("rate_limits"),
    upstreams,
  } as unknown as GatewayConfig;
}
