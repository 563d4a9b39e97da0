/**
 * The usage endpoints of the admin listener (SPEC §21): `GET /usage/<identity>[?plan=]`,
 * `GET /usage/top` (answered by `usage-top.ts`),
 * `POST /usage/<identity>/reset`, `GET /overrides`, `GET|PUT|DELETE /overrides/<identity>`.
 *
 * Transport-free: a call is plain data (method, target, `Authorization`, body) and so is the
 * answer, so the same handler serves a gateway's own admin listener and, in a process group, the
 * primary's (which hands the call to a worker: SPEC §15). Order: enabled (`admin.token_file`, else
 * 404) → authenticated (Bearer token, SHA-256 digests compared in constant time, else 401) → route
 * (404/405) → validate (400) → store (503 when it does not answer). Every answer is counted in
 * `gateway_admin_requests_total{action,code}`; every reset and override change is logged at `info`
 * with `"audit":true`, the action, the identity, and what it was and became. The token itself is
 * never logged: nothing here logs the call's headers.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { Logger } from "pino";
import { parseOverrideBody } from "../config/override-schema.js";
import type { Runtime } from "../core/runtime.js";
import { isUsageIdentity, planOf, readUsage, resetKeys } from "../core/identity-usage.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import type { Override } from "../ratelimit/overrides.js";
import { calendarPeriodsByClass, topCallers } from "./usage-top.js";

/** One admin call as the listener received it. */
export interface AdminCall {
  method: string;
  /** Path and query, as on the request line. */
  target: string;
  authorization: string | undefined;
  /** The request body (UTF-8), "" without one. */
  body: string;
}

/** The answer to an {@link AdminCall}: always JSON. */
export interface AdminAnswer {
  status: number;
  body: string;
  /** Extra headers (`WWW-Authenticate`, `Allow`). */
  headers: Record<string, string>;
}

/** The `action` label of `gateway_admin_requests_total`. */
export type AdminAction =
  | "usage_read"
  | "usage_top"
  | "usage_reset"
  | "override_put"
  | "override_get"
  | "override_delete"
  | "override_list"
  | "unknown";

/** True for the paths this handler answers (`/usage...`, `/overrides...`). */
export function isUsagePath(path: string): boolean {
  return /^\/(usage|overrides)(\/|$)/.test(path);
}

/** Dependencies of {@link UsageAdmin}. */
export interface UsageAdminDeps {
  /** The configuration in force (its token digest, policies, limiter). */
  runtime(): Runtime;
  logger: Logger;
  metrics: Pick<GatewayMetrics, "adminRequests">;
}

/** A route of the call, found before the token is checked so that a 401 is labelled too. */
interface Route {
  action: AdminAction;
  /** The methods the path allows (405 otherwise). */
  allow: string;
  identity: string | null;
}

/** Answers admin usage calls. */
export class UsageAdmin {
  constructor(private readonly deps: UsageAdminDeps) {}

  /** Answers one call; never rejects. */
  async handle(call: AdminCall): Promise<AdminAnswer> {
    const url = new URL(call.target, "http://admin");
    const route = routeOf(call.method, url.pathname);
    let answer: AdminAnswer;
    try {
      answer = await this.answer(call, url, route);
    } catch (err) {
      this.deps.logger.warn(
        { err: { message: (err as Error).message }, action: route.action },
        "admin call failed",
      );
      answer = error(503, "Rate limit service unavailable");
    }
    this.deps.metrics.adminRequests.inc({ action: route.action, code: String(answer.status) });
    return answer;
  }

  private async answer(call: AdminCall, url: URL, route: Route): Promise<AdminAnswer> {
    const rt = this.deps.runtime();
    if (rt.adminTokenDigest === null) return error(404, "Not found");
    if (!tokenMatches(call.authorization, rt.adminTokenDigest)) {
      const a = error(401, "Admin token required");
      a.headers["www-authenticate"] = 'Bearer realm="admin"';
      return a;
    }
    if (route.action === "unknown") return error(404, "Not found");
    if (!route.allow.split(", ").includes(call.method)) {
      const a = error(405, "Method not allowed");
      a.headers.allow = route.allow;
      return a;
    }
    const identity = route.identity;
    if (identity !== null && !isUsageIdentity(identity))
      return error(
        400,
        `not a storage identity: expected sub:<sub>, client:<client_id>, user:<username> or claim:<name>:<value>`,
      );
    const usage = rt.limiter.usage;
    const nowMs = rt.clock.nowMs();
    switch (route.action) {
      case "usage_top": {
        const periods = calendarPeriodsByClass(rt.config);
        const a = await topCallers(rt.limiter.top, periods, url.searchParams);
        return { status: a.status, body: JSON.stringify(a.body), headers: {} };
      }
      case "usage_read": {
        const planName = url.searchParams.get("plan");
        const plan = planOf(rt, identity!, planName);
        if (plan === undefined)
          return error(400, `plan: ${JSON.stringify(planName)} is not a configured plan`);
        return ok(await readUsage(rt, identity!, plan));
      }
      case "usage_reset":
        return this.reset(rt, identity!, call.body);
      case "override_list":
        await usage.sync();
        return ok({
          overrides: usage.overrides.list(nowMs).sort((a, b) => (a.identity < b.identity ? -1 : 1)),
        });
      case "override_get": {
        await usage.sync();
        const o = usage.overrides.get(identity!, nowMs);
        return o === undefined ? error(404, `no override for ${identity!}`) : ok(o);
      }
      case "override_put":
        return this.put(rt, identity!, call.body);
      case "override_delete": {
        const before = await usage.setOverride(identity!, null);
        if (before === null) return error(404, `no override for ${identity!}`);
        this.audit("override_delete", identity!, before, null);
        return ok({ deleted: before });
      }
    }
  }

  private async reset(rt: Runtime, identity: string, body: string): Promise<AdminAnswer> {
    const parsed = parseJson(body === "" ? "{}" : body);
    const cls = (parsed as { class?: unknown } | undefined)?.class;
    const names = [...rt.policies.byClass.keys()];
    if (parsed === undefined || typeof parsed !== "object" || parsed === null)
      return error(400, 'expected a JSON object, {"class":"<name>"} or {}');
    if (cls !== undefined && (typeof cls !== "string" || !names.includes(cls)))
      return error(
        400,
        `class: ${JSON.stringify(cls)} is not a limit class of the configuration (${names.join(", ")})`,
      );
    const classes = cls === undefined ? names : [cls];
    const plan = planOf(rt, identity, null)!;
    const before = await readUsage(rt, identity, plan);
    await rt.limiter.usage.reset(identity, await resetKeys(rt, identity, classes), classes);
    const after = await readUsage(rt, identity, plan);
    this.audit("usage_reset", identity, before.classes, after.classes, { classes });
    return ok(after);
  }

  private async put(rt: Runtime, identity: string, body: string): Promise<AdminAnswer> {
    if (identity.startsWith("claim:"))
      return error(400, "overrides apply to a caller's identity, not to a budget");
    const json = parseJson(body);
    if (json === undefined) return error(400, "expected a JSON body");
    const costs = Object.fromEntries([...rt.policies.byClass].map(([n, p]) => [n, p.cost]));
    const r = parseOverrideBody(json, costs, Math.floor(rt.clock.nowMs() / 1000));
    if (!r.ok) return error(400, r.problems.join("; "));
    const next: Override = { identity, classes: r.value.classes, expires_at: r.value.expires_at ?? null };
    const before = await rt.limiter.usage.setOverride(identity, next);
    this.audit("override_put", identity, before, next);
    return ok(next);
  }

  private audit(action: AdminAction, identity: string, before: unknown, after: unknown, extra = {}): void {
    this.deps.logger.info({ audit: true, action, identity, ...extra, before, after }, "usage operation");
  }
}

/** The route of a path, whatever the method (the method is checked after the token). */
function routeOf(method: string, path: string): Route {
  const seg = path.split("/").slice(1);
  let identity: string | null = null;
  if (seg.length >= 2) {
    try {
      identity = decodeURIComponent(seg[1]!);
    } catch {
      identity = "";
    }
  }
  if (seg[0] === "usage" && seg.length === 2 && seg[1] === "top")
    return { action: "usage_top", allow: "GET, HEAD", identity: null };
  if (seg[0] === "usage" && seg.length === 2 && identity !== "")
    return { action: "usage_read", allow: "GET, HEAD", identity };
  if (seg[0] === "usage" && seg.length === 3 && seg[2] === "reset")
    return { action: "usage_reset", allow: "POST", identity };
  if (seg[0] === "overrides" && seg.length === 1)
    return { action: "override_list", allow: "GET, HEAD", identity };
  if (seg[0] === "overrides" && seg.length === 2 && identity !== "") {
    const action =
      method === "PUT" ? "override_put" : method === "DELETE" ? "override_delete" : "override_get";
    return { action, allow: "GET, HEAD, PUT, DELETE", identity };
  }
  return { action: "unknown", allow: "", identity };
}

/** `Bearer <token>` whose SHA-256 equals `digest`, compared in constant time. */
function tokenMatches(header: string | undefined, digest: Buffer): boolean {
  const m = header === undefined ? null : /^bearer +(\S+) *$/i.exec(header);
  if (m === null) return false;
  return timingSafeEqual(createHash("sha256").update(m[1]!).digest(), digest);
}

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}

function ok(body: unknown): AdminAnswer {
  return { status: 200, body: JSON.stringify(body), headers: {} };
}

function error(status: number, message: string): AdminAnswer {
  return { status, body: JSON.stringify({ error: { code: status, message } }), headers: {} };
}
