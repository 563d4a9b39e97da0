/**
 * A caller's plan (SPEC §10): the first `consumers` entry whose every given field equals the
 * token's, else the `plan_claim` value when it names a plan, else `default_plan`, else none — by
 * lookups prepared at configuration time. And the compiled policies: a plan replaces only the
 * windows of the classes it names, and every plan's policies count under the same storage keys.
 */
import { describe, expect, it } from "vitest";
import { toTokenInfo } from "../../gateway/auth/introspection.js";
import type { TokenInfo } from "../../gateway/base/token-info.js";
import { parseConfig } from "../../gateway/config/load.js";
import { identityOf } from "../../gateway/ratelimit/identity.js";
import { windowKey } from "../../gateway/ratelimit/storage-keys.js";
import { PlanResolver, type ConsumerEntry } from "../../gateway/ratelimit/plans.js";
import { compilePolicies } from "../../gateway/ratelimit/policy.js";

const PLANS = new Map([
  ["free", "free"],
  ["pro", "pro"],
  ["ci", "ci"],
]);

const token = (fields: Partial<TokenInfo> & { plan?: unknown } = {}): TokenInfo => {
  const { plan, ...rest } = fields;
  return {
    active: true,
    scope: [],
    ...rest,
    ...(plan === undefined ? {} : { claims: { plan } }),
  };
};

/** @param claim - `plan_claim`, or null for none */
function resolver(consumers: ConsumerEntry[], claim: string | null = "plan", fallback = "free") {
  const r = new PlanResolver(PLANS, consumers, claim ?? undefined, fallback);
  return (info: TokenInfo) => {
    const choice = r.resolve(info);
    return `${choice.plan}${choice.claimUnknown ? " (claim unknown)" : ""}`;
  };
}

describe("PlanResolver", () => {
  const consumers: ConsumerEntry[] = [
    { client_id: "ci-bot", plan: "ci" },
    { sub: "user-123", plan: "pro" },
    { sub: "user-123", client_id: "ci-bot", plan: "free" }, // never first: entry 0 already matches
    { sub: "alice", client_id: "web", plan: "pro" },
    { client_id: "web", plan: "ci" },
    { sub: "user-123", plan: "ci" }, // a later duplicate never matches
  ];
  const planOf = resolver(consumers);

  it("picks the first entry whose every given field equals the token's", () => {
    expect(planOf(token({ clientId: "ci-bot" }))).toBe("ci");
    expect(planOf(token({ sub: "user-123", clientId: "app" }))).toBe("pro");
    expect(planOf(token({ sub: "user-123", clientId: "ci-bot" }))).toBe("ci");
    expect(planOf(token({ sub: "alice", clientId: "web" }))).toBe("pro");
    expect(planOf(token({ sub: "bob", clientId: "web" }))).toBe("ci");
    // An entry with both fields needs both.
    expect(planOf(token({ sub: "alice", clientId: "app" }))).toBe("free");
  });

  it("checks consumers before the claim, the claim before default_plan", () => {
    expect(planOf(token({ sub: "user-123", plan: "free" }))).toBe("pro");
    expect(planOf(token({ sub: "carol", plan: "pro" }))).toBe("pro");
    expect(planOf(token({ sub: "carol" }))).toBe("free");
  });

  it("treats a claim naming no configured plan as absent, and flags it to be counted", () => {
    expect(planOf(token({ sub: "carol", plan: "gold" }))).toBe("free (claim unknown)");
    expect(planOf(token({ sub: "carol", plan: 7 }))).toBe("free (claim unknown)");
    expect(planOf(token({ sub: "carol", plan: ["pro"] }))).toBe("free (claim unknown)");
    expect(planOf(token({ sub: "carol", plan: "" }))).toBe("free (claim unknown)");
    // SPEC §10: any value that is not a string naming a plan, JSON null included.
    expect(planOf(token({ sub: "carol", plan: null }))).toBe("free (claim unknown)");
    // A consumer entry decides before the claim is read: nothing to count.
    expect(planOf(token({ sub: "user-123", plan: "gold" }))).toBe("pro");
  });

  it("reads no claim without plan_claim, and falls back to no plan without default_plan", () => {
    const noClaim = resolver([], null, "none");
    expect(noClaim(token({ sub: "carol", plan: "pro" }))).toBe("none");
    expect(resolver([], "plan", "none")(token({ sub: "carol" }))).toBe("none");
  });

  it("reads the claim the introspection source kept, as the source sent it", () => {
    const planOfReply = (reply: Record<string, unknown>) =>
      planOf(toTokenInfo({ active: true, sub: "dave", ...reply }, ["plan"]));
    expect(planOfReply({ plan: "pro" })).toBe("pro");
    expect(planOfReply({ plan: { name: "pro" } })).toBe("free (claim unknown)");
    expect(planOfReply({ tier: "pro" })).toBe("free");
    expect(planOfReply({ plan: null })).toBe("free (claim unknown)");
    expect(toTokenInfo({ active: true, plan: "pro", tier: "x" }, ["plan"]).claims).toEqual({ plan: "pro" });
    expect(toTokenInfo({ active: true, plan: "pro" }).claims).toBeUndefined();
  });

  it("resolves 1000 consumers by lookups, not a scan: resolve() never reads the consumers list", () => {
    const entries: ConsumerEntry[] = Array.from({ length: 1000 }, (_, i) => ({ sub: `u-${i}`, plan: "pro" }));
    let reads = 0;
    // Counts every element read of the list (a scan, or a search such as find(), reads elements).
    const many = new Proxy(entries, {
      get(target, key, receiver) {
        if (typeof key === "string" && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
    const big = new PlanResolver(PLANS, many, "plan", "free");
    expect(reads).toBe(1000); // read once, when prepared
    reads = 0;
    expect(big.resolve(token({ sub: "u-999" })).plan).toBe("pro");
    expect(big.resolve(token({ sub: "u-0" })).plan).toBe("pro");
    expect(big.resolve(token({ sub: "nobody" })).plan).toBe("free");
    expect(reads).toBe(0);
  });
});

describe("compiled plans", () => {
  const config = parseConfig(
    [
      "upstreams: { docs: { url: 'http://127.0.0.1:3000' } }",
      "routes: [{ prefix: /v1, upstream: docs }]",
      "auth: { static: { tokens_file: t.yaml } }",
      "headers: { ietf: true }",
      "rate_limits:",
      "  classes:",
      "    read: { algorithm: sliding_log, windows: [{ limit: 5000, window_s: 3600 }] }",
      "    bulk: { identity: client, mode: shadow, windows: [{ limit: 100, window_s: 60 }] }",
      "  plan_claim: plan",
      "  default_plan: free",
      "  plans:",
      "    free: {}",
      "    pro: { read: [{ limit: 50, window_s: 1 }, { limit: 15000, window_s: 3600 }] }",
      "  consumers: [{ client_id: ci-bot, plan: pro }]",
    ].join("\n"),
    "inline",
    {},
  );
  const set = compilePolicies(config);
  const pro = set.plans.get("pro")!.byClass;
  const free = set.plans.get("free")!.byClass;

  it("replaces only the windows of the classes a plan names; match, algorithm, mode and identity stay", () => {
    expect(pro.get("read")).toMatchObject({
      className: "read",
      plan: "pro",
      algorithm: "sliding_log",
      windows: [
        { limit: 50, windowS: 1 },
        { limit: 15000, windowS: 3600 },
      ],
      ietfPolicy: '"read-1s";q=50;w=1, "read-3600s";q=15000;w=3600',
    });
    expect(pro.get("bulk")).toMatchObject({ plan: "pro", mode: "shadow", identity: "client" });
    expect(pro.get("bulk")!.windows).toEqual(set.byClass.get("bulk")!.windows);
    expect(free.get("read")).toMatchObject({ plan: "free", windows: [{ limit: 5000, windowS: 3600 }] });
    expect(set.byClass.get("read")!.plan).toBeNull();
    expect(set.anonymous.plan).toBeNull();
  });

  it("counts every plan's policy of a class under the same key: the plan is never part of it", () => {
    const none = set.byClass.get("read")!;
    expect(windowKey("rl:", "sub:a", none, 0)).toBe("rl:{sub:a}:read:3600:log");
    expect(windowKey("rl:", "sub:a", free.get("read")!, 0)).toBe("rl:{sub:a}:read:3600:log");
    expect(windowKey("rl:", "sub:a", pro.get("read")!, 1)).toBe("rl:{sub:a}:read:3600:log");
  });

  it("resolves to the compiled plan, and a class's identity picks the key's kind", () => {
    const info = token({ sub: "alice", clientId: "ci-bot" });
    const plan = set.resolver.resolve(info).plan;
    expect(plan.name).toBe("pro");
    expect(identityOf(info, plan.byClass.get("read")!.identity, "h").key).toBe("sub:alice");
    expect(identityOf(info, plan.byClass.get("bulk")!.identity, "h").key).toBe("client:ci-bot");
    expect(set.resolver.resolve(token({ sub: "bob" })).plan.name).toBe("free");
  });
});
