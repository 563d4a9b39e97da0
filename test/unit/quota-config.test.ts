/**
 * SPEC §19 configuration: a window is `window_s` or `period`, never both or neither; periods are
 * the five named; `quota_utc_offset` is `±HH:MM` within -12:00..+14:00. Each problem names its key
 * path (fixtures named after the failure). A valid quota configuration compiles to calendar
 * windows aligned to the offset, `gateway check` prints them, and `RateLimit-Policy`'s `w` is the
 * current period's length (28 to 31 days for a month).
 */
import { describe, expect, it } from "vitest";
import { describeConfig } from "../../gateway/cli/describe-config.js";
import { parseConfig } from "../../gateway/config/load.js";
import { compilePolicies } from "../../gateway/ratelimit/policy.js";
import { rateLimitHeaders } from "../../gateway/ratelimit/headers.js";
import { problemsOf } from "../helpers/config-problems.js";

describe("calendar windows: configuration errors name the key path", () => {
  it("window_both_and_neither", () => {
    expect(problemsOf("window_both_and_neither.yaml")).toEqual([
      "rate_limits.classes.read.windows[1]: expected exactly one of `window_s` (sliding) and `period` (calendar), received both @12:48",
      "rate_limits.classes.write.windows[0]: expected exactly one of `window_s` (sliding) and `period` (calendar), received neither @14:24",
    ]);
  });

  it("plan_window_unknown_period", () => {
    expect(problemsOf("plan_window_unknown_period.yaml")).toEqual([
      'rate_limits.plans.pro.read[1].period: expected one of "minute", "hour", "day", "week", "month", received "year" @11:73',
    ]);
  });

  it("quota_utc_offset_out_of_range", () => {
    expect(problemsOf("quota_utc_offset_out_of_range.yaml")).toEqual([
      'rate_limits.quota_utc_offset: expected a UTC offset `±HH:MM` from -12:00 to +14:00, received "+14:30" @8:21',
    ]);
  });

  it("quota_utc_offset_not_hh_mm", () => {
    expect(problemsOf("quota_utc_offset_not_hh_mm.yaml")).toEqual([
      'rate_limits.quota_utc_offset: expected a UTC offset `±HH:MM` from -12:00 to +14:00, received "9:00" @8:21',
    ]);
  });
});

const config = (offset: string | null) =>
  parseConfig(
    [
      "upstreams: { docs: { url: 'http://127.0.0.1:3000' } }",
      "routes: [{ prefix: /v1, upstream: docs }]",
      "auth: { static: { tokens_file: t.yaml } }",
      "headers: { ietf: true }",
      "rate_limits:",
      ...(offset === null ? [] : [`  quota_utc_offset: "${offset}"`]),
      "  classes:",
      "    read: { windows: [{ limit: 100, window_s: 60 }, { limit: 10000, period: month }] }",
      "    write: { windows: [{ limit: 1000, period: day }] }",
      "  plans:",
      "    pro: { read: [{ limit: 1000, window_s: 60 }, { limit: 1000000, period: month }] }",
      "  anonymous: { windows: [{ limit: 50, period: hour }] }",
    ].join("\n"),
    "inline",
    {},
  );

describe("a configuration with quotas", () => {
  it("defaults quota_utc_offset to +00:00 and accepts the extremes -12:00 and +14:00", () => {
    expect(config(null).rate_limits.quota_utc_offset).toBe("+00:00");
    for (const o of ["-12:00", "+14:00", "+05:45", "-00:00"])
      expect(config(o).rate_limits.quota_utc_offset).toBe(o);
  });

  it("compiles calendar windows with the offset, for the classes, the plans and the anonymous class", () => {
    const set = compilePolicies(config("+09:00"));
    const nine = 9 * 3_600_000;
    expect(set.byClass.get("read")!.windows).toEqual([
      { limit: 100, windowS: 60 },
      { limit: 10000, period: "month", offsetMs: nine },
    ]);
    expect(set.plans.get("pro")!.byClass.get("read")!.windows[1]).toEqual({
      limit: 1000000,
      period: "month",
      offsetMs: nine,
    });
    expect(set.anonymous.windows).toEqual([{ limit: 50, period: "hour", offsetMs: nine }]);
  });

  it("`gateway check` prints a calendar window by its period", () => {
    const text = describeConfig(config(null));
    expect(text).toContain("100/60s + 10000/month");
    expect(text).toContain("1000/day");
    expect(text).toContain("1000/60s + 1000000/month");
  });

  it("RateLimit-Policy names calendar items by period and gives the current period's length as w", () => {
    const set = compilePolicies(config("+09:00"));
    const read = set.byClass.get("read")!;
    const at = (iso: string) =>
      rateLimitHeaders(
        {
          allowed: true,
          windowIndex: 1,
          limit: 10000,
          remaining: 9999,
          resetAtMs: 0,
          nowMs: Date.parse(iso),
          degraded: false,
        },
        read,
      );
    // February 2024 at +09:00 runs from Feb 1 00:00+09:00 to Mar 1 00:00+09:00: 29 days.
    expect(at("2024-02-10T00:00:00Z").ietfPolicy).toBe(
      `"read-60s";q=100;w=60, "read-month";q=10000;w=2505600`,
    );
    // Feb 29 20:00Z is Mar 1 05:00 at +09:00: March, 31 days.
    expect(at("2024-02-29T20:00:00Z").ietfPolicy).toBe(
      `"read-60s";q=100;w=60, "read-month";q=10000;w=2678400`,
    );
    expect(at("2023-02-10T00:00:00Z").ietfPolicy).toContain(`"read-month";q=10000;w=2419200`);
    expect(at("2026-04-10T00:00:00Z").ietfPolicy).toContain(`"read-month";q=10000;w=2592000`);
    expect(at("2026-04-10T00:00:00Z").ietf).toBe(`"read-month";r=9999;t=1`);
    expect(set.byClass.get("write")!.ietfPolicy).toBe(`"write";q=1000;w=86400`);
    expect(set.byClass.get("write")!.ietfPolicyAt).toBeNull();
  });
});
