/**
 * SPEC §16 validation: every upstream pool problem reported at once with its key path, in fixtures
 * named after the failure they cause; `url` stays the one-endpoint form.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../gateway/config/load.js";
import { endpointName, endpointsOf } from "../../gateway/config/upstream-schema.js";
import { configFixture, problemsOf } from "../helpers/config-problems.js";
import { checkFiles } from "../../gateway/server/config-files.js";

describe("upstream pool configuration errors name the key path", () => {
  it("upstream_url_and_endpoints: both, or neither", () => {
    expect(problemsOf("upstream_url_and_endpoints.yaml")).toEqual([
      "upstreams.docs: expected exactly one of `url` and `endpoints` @3:5",
      "upstreams.bare: expected exactly one of `url` and `endpoints` @5:9",
    ]);
  });

  it("upstream_empty_endpoints", () => {
    expect(problemsOf("upstream_empty_endpoints.yaml")).toEqual([
      "upstreams.docs.endpoints: expected at least one endpoint @2:22",
    ]);
  });

  it("upstream_endpoints_mixed_schemes_and_paths lists what differs", () => {
    expect(problemsOf("upstream_endpoints_mixed_schemes_and_paths.yaml")).toEqual([
      "upstreams.docs.endpoints: every endpoint needs the same scheme and base path (found http://…/api, https://…/api, http://…/other) @4:7",
    ]);
  });

  it("upstream_weight_not_positive_integer names each endpoint's weight", () => {
    expect(problemsOf("upstream_weight_not_positive_integer.yaml")).toEqual([
      "upstreams.docs.endpoints[0].weight: expected a positive integer, received 0 @4:46",
      "upstreams.docs.endpoints[1].weight: expected a positive integer, received 1.5 @5:46",
    ]);
  });

  it("upstream_hash_on_without_consistent_hash", () => {
    expect(problemsOf("upstream_hash_on_without_consistent_hash.yaml")).toEqual([
      'upstreams.docs.hash_on: `hash_on` needs `balancer: consistent_hash`, received "ip" @4:14',
    ]);
  });

  it("upstream_health_check_bad_path_and_timeout", () => {
    expect(problemsOf("upstream_health_check_bad_path_and_timeout.yaml")).toEqual([
      'upstreams.docs.health_check.path: expected a path starting with /, received "healthz" @4:27',
      "upstreams.docs.health_check.timeout_ms: timeout_ms (2000) must not exceed interval_ms (1000), received 2000 @4:67",
    ]);
  });

  it("upstream_unknown_balancer and an unknown hash_on", () => {
    expect(problemsOf("upstream_unknown_balancer.yaml")).toEqual([
      'upstreams.docs.balancer: expected one of "round_robin", "least_request", "consistent_hash", received "random" @4:15',
      'upstreams.docs.hash_on: expected identity, ip or header:<name>, received "cookie" @5:14',
    ]);
  });
});

describe("a valid pool", () => {
  it("gets SPEC §16's defaults, and `url` is one endpoint of weight 1", () => {
    const { config } = loadConfig(configFixture("valid_upstream_pool.yaml"), {}, { checkFiles });
    const docs = config.upstreams.docs!;
    expect(endpointsOf(docs)).toEqual([
      { url: "http://10.0.0.1:3000", weight: 1 },
      { url: "http://10.0.0.2:3000", weight: 2 },
    ]);
    expect(docs.health_check).toEqual({
      path: "/healthz",
      interval_ms: 2000,
      timeout_ms: 1000,
      healthy_threshold: 2,
      unhealthy_threshold: 3,
    });
    expect(docs.outlier_detection).toEqual({
      consecutive_failures: 5,
      base_ejection_ms: 30000,
      max_ejection_percent: 50,
    });
    const single = loadConfig(configFixture("valid_minimal.yaml")).config;
    const one = Object.values(single.upstreams)[0]!;
    expect(one.balancer).toBe("round_robin");
    expect(endpointsOf(one)).toEqual([{ url: one.url, weight: 1 }]);
  });

  it("names an endpoint host:port, with the scheme's port when the URL has none", () => {
    expect(endpointName("http://10.0.0.1:3000/api")).toBe("10.0.0.1:3000");
    expect(endpointName("https://docs.internal/")).toBe("docs.internal:443");
    expect(endpointName("http://[::1]/")).toBe("[::1]:80");
  });
});
