/**
 * SPEC §10 validation: every plans/consumers/identity problem by its key path, with its YAML
 * position, as `gateway check` and start report it. Fixtures are named after the failure they
 * cause. And `gateway check`'s summary of each plan's effective windows per class.
 */
import { describe, expect, it } from "vitest";
import { describeConfig } from "../../gateway/cli/describe-config.js";
import { loadConfig, parseConfig, type ConfigError } from "../../gateway/config/load.js";
import { configFixture, problemsOf } from "../helpers/config-problems.js";

const fixture = configFixture;

describe("plans and consumers: configuration errors name the key path", () => {
  it("plan_names_unknown_class", () => {
    expect(problemsOf("plan_names_unknown_class.yaml")).toEqual([
      'rate_limits.plans.pro.reed: unknown class "reed" (known: read, write) @14:7',
    ]);
  });

  it("plan_names_anonymous_class", () => {
    expect(problemsOf("plan_names_anonymous_class.yaml")).toEqual([
      "rate_limits.plans.pro.anonymous: the anonymous class has no plans (its windows are `rate_limits.anonymous`) @13:18",
    ]);
  });

  it("consumer_unknown_plan", () => {
    expect(problemsOf("consumer_unknown_plan.yaml")).toEqual([
      'rate_limits.consumers[1].plan: unknown plan "gold" (known: free, pro), received "gold" @16:30',
    ]);
  });

  it("default_plan_unknown", () => {
    expect(problemsOf("default_plan_unknown.yaml")).toEqual([
      'rate_limits.default_plan: unknown plan "free" (known: pro), received "free" @11:17',
    ]);
  });

  it("consumer_without_sub_or_client_id", () => {
    expect(problemsOf("consumer_without_sub_or_client_id.yaml")).toEqual([
      "rate_limits.consumers[1]: expected `sub` and/or `client_id` @15:7",
    ]);
  });

  it("identity_unknown_kind", () => {
    expect(problemsOf("identity_unknown_kind.yaml")).toEqual([
      'rate_limits.identity: expected one of "subject", "client", received "user" @11:13',
    ]);
  });

  it("plan_named_none", () => {
    expect(problemsOf("plan_named_none.yaml")).toEqual([
      "rate_limits.plans.none: the name `none` is reserved: it is the `plan` label of callers without a plan @12:5",
    ]);
  });

  it("plan_window_not_positive", () => {
    expect(problemsOf("plan_window_not_positive.yaml")).toEqual([
      "rate_limits.plans.pro.write[0].limit: expected a positive integer, received 0 @12:29",
    ]);
  });

  it("reports a bad plan name, a bad per-class identity and an unknown plan together, in one run", () => {
    const text = [
      "upstreams: { docs: { url: 'http://127.0.0.1:3000' } }",
      "routes: [{ prefix: /v1, upstream: docs }]",
      "auth: { static: { tokens_file: t.yaml } }",
      "rate_limits:",
      "  classes:",
      "    read: { identity: user, windows: [{ limit: 1, window_s: 1 }] }",
      '  plans: { "pro plan": {} }',
      "  consumers: [{ sub: a, plan: gold }]",
    ].join("\n");
    let problems: string[] = [];
    try {
      parseConfig(text, "inline", {});
    } catch (err) {
      problems = (err as ConfigError).problems.map((p) => `${p.path}: ${p.message}`);
    }
    expect(problems).toEqual([
      'rate_limits.classes.read.identity: expected one of "subject", "client", received "user"',
      'rate_limits.plans["pro plan"]: expected a plan name (letters, digits, `_` and `-`; at most 64), received "pro plan"',
      'rate_limits.consumers[0].plan: unknown plan "gold" (known: pro plan), received "gold"',
    ]);
  });
});

describe("a configuration with plans", () => {
  const config = parseConfig(
    [
      "upstreams: { docs: { url: 'http://127.0.0.1:3000' } }",
      "routes: [{ prefix: /v1, upstream: docs }]",
      "auth: { static: { tokens_file: t.yaml } }",
      "rate_limits:",
      "  identity: client",
      "  classes:",
      "    read: { identity: subject, windows: [{ limit: 5000, window_s: 3600 }] }",
      "    bulk: { windows: [{ limit: 100, window_s: 60 }] }",
      "  plan_claim: plan",
      "  default_plan: free",
      "  plans:",
      "    free: {}",
      "    pro: { read: [{ limit: 15000, window_s: 3600 }, { limit: 50, window_s: 1 }] }",
      "  consumers: [{ client_id: ci-bot, plan: pro }, { sub: user-123, plan: pro }]",
    ].join("\n"),
    "inline",
    {},
  );

  it("gets `identity: subject`, no plans and no consumers by default", () => {
    const { config: minimal } = loadConfig(fixture("valid_minimal.yaml"), {});
    expect(minimal.rate_limits).toMatchObject({ identity: "subject", plans: {}, consumers: [] });
    expect(minimal.rate_limits.plan_claim).toBeUndefined();
    expect(minimal.rate_limits.default_plan).toBeUndefined();
  });

  it("`gateway check` prints each plan's effective windows per class, and whose budget each class is", () => {
    const text = describeConfig(config);
    expect(text).toContain("read         5000/3600s           sliding_window  per subject");
    expect(text).toContain("bulk         100/60s              sliding_window  per client");
    const plans = text.slice(text.indexOf("plans ("), text.indexOf("store:")).trimEnd().split("\n");
    expect(plans).toEqual([
      'plans (a caller\'s plan: a consumers entry (2), then the "plan" claim, then default_plan "free"):',
      "  free (default_plan)",
      "    read         5000/3600s           (class)",
      "    bulk         100/60s              (class)",
      "  pro (2 consumers)",
      "    read         15000/3600s + 50/1s  (plan)",
      "    bulk         100/60s              (class)",
    ]);
  });

  it("`gateway check` says so when there are no plans", () => {
    const { config: minimal } = loadConfig(fixture("valid_minimal.yaml"), {});
    expect(describeConfig(minimal)).toContain("plans: none (every caller gets the classes' windows)");
  });
});
