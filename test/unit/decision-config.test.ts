/**
 * The `decision` block and `listen.enabled` (SPEC §23): defaults, and the problems a configuration
 * can have, each at its key path (fixtures named after the failure they cause).
 */
import { describe, expect, it } from "vitest";
import { describeConfig } from "../../gateway/cli/describe-config.js";
import { parseConfig } from "../../gateway/config/load.js";
import { problemsOf } from "../helpers/config-problems.js";

const base = `
upstreams: { docs: { url: "http://127.0.0.1:3000" } }
routes: [{ prefix: /v1, upstream: docs }]
auth: { static: { tokens_file: tokens.yaml } }
rate_limits: { classes: { read: { windows: [{ limit: 10, window_s: 60 }] } } }
`;

describe("decision configuration", () => {
  it("defaults: loopback 8081, /decide, nginx_status false; the API listener enabled", () => {
    const c = parseConfig(`${base}decision: {}\n`, "test");
    expect(c.decision).toEqual({
      listen: { host: "127.0.0.1", port: 8081 },
      path: "/decide",
      nginx_status: false,
    });
    expect(c.listen.enabled).toBe(true);
  });

  it("is absent without the block", () => {
    expect(parseConfig(base, "test").decision).toBeUndefined();
  });

  it("decision_port_is_listen_port: the port and a trailing slash, each at its key path", () => {
    expect(problemsOf("decision_port_is_listen_port.yaml")).toEqual([
      'decision.path: expected an absolute path without query, fragment or trailing slash (e.g. /decide), received "/decide/" @4:9',
      "decision.listen.port: the decision listener's port 8080 is listen.port's too: give each listener its own, received 8080 @3:19",
    ]);
  });

  it("listen_disabled_without_decision: nothing would serve", () => {
    expect(problemsOf("listen_disabled_without_decision.yaml")).toEqual([
      "listen.enabled: `listen.enabled: false` needs a `decision` block: nothing would serve a call, received false @1:20",
    ]);
  });

  it("the decision port may equal listen.port when the API listener is off, never admin.port", () => {
    const off = parseConfig(`${base}listen: { enabled: false, port: 8081 }\ndecision: {}\n`, "test");
    expect(off.decision?.listen.port).toBe(8081);
    expect(() => parseConfig(`${base}admin: { port: 8081 }\ndecision: {}\n`, "test")).toThrow(
      /decision\.listen\.port: the decision listener's port 8081 is admin\.port's too/,
    );
  });

  it("gateway check lists the listeners: the API one off, the decision one with its path", () => {
    const c = parseConfig(`${base}listen: { enabled: false }\ndecision: { nginx_status: true }\n`, "test");
    expect(describeConfig(c, {})).toContain(
      "listeners: api off, decision 127.0.0.1:8081/decide (nginx_status), admin 0.0.0.0:9090",
    );
  });
});
