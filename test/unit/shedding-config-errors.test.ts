/**
 * SPEC §18 validation: load shedding and adaptive concurrency problems reported with their key
 * paths, in fixtures named after the failure they cause; the defaults of a valid block.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../gateway/config/load.js";
import { configFixture, problemsOf } from "../helpers/config-problems.js";
import { checkFiles } from "../../gateway/server/config-files.js";

describe("load shedding configuration errors name the key path", () => {
  it("shedding_priority_unknown_plan_and_priority", () => {
    expect(problemsOf("shedding_priority_unknown_plan_and_priority.yaml")).toEqual([
      'load_shedding.priorities.pro: expected one of "critical", "default", "sheddable", received "urgent" @14:55',
      'load_shedding.priorities.gold: unknown plan "gold" (known: free, pro) @14:34',
    ]);
  });

  it("shedding_share_out_of_range_and_unknown_priority", () => {
    expect(problemsOf("shedding_share_out_of_range_and_unknown_priority.yaml")).toEqual([
      "load_shedding.shares.sheddable: expected a number in (0, 1], received 0 @14:24",
      "load_shedding.shares.default: expected a number in (0, 1], received 1.5 @14:36",
      'load_shedding.shares: unknown key "urgent" (known: sheddable, default, critical) @14:41',
    ]);
  });

  it("adaptive_min_limit_above_max_limit", () => {
    expect(problemsOf("adaptive_min_limit_above_max_limit.yaml")).toEqual([
      'upstreams.docs.adaptive_concurrency.mode: expected one of "enforce", "shadow", received "enforced" @4:65',
      "upstreams.docs.adaptive_concurrency.min_limit: min_limit (50) must not exceed max_limit (10), received 50 @4:40",
    ]);
  });
});

describe("a valid load shedding configuration", () => {
  it("gets SPEC §18's defaults", () => {
    const { config } = loadConfig(configFixture("valid_load_shedding.yaml"), {}, { checkFiles });
    expect(config.upstreams.docs!.adaptive_concurrency).toEqual({
      min_limit: 5,
      max_limit: 1000,
      mode: "enforce",
    });
    expect(config.load_shedding).toEqual({
      priorities: { free: "sheddable", pro: "critical" },
      shares: { sheddable: 0.5, default: 0.9, critical: 1.0 },
    });
    expect(loadConfig(configFixture("valid_minimal.yaml")).config.load_shedding).toBeUndefined();
  });
});
