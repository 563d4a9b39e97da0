/**
 * Routing by example (SPEC §7): the route table (longest prefix at a segment boundary), the
 * classifier (first match wins, methods and paths, default class) and request-target
 * normalisation. The general laws are in properties.test.ts.
 */
import { describe, expect, it } from "vitest";
import { gatewayConfigSchema, type GatewayConfigInput } from "../../gateway/config/schema.js";
import { Classifier } from "../../gateway/routing/classify.js";
import { normalizeTarget } from "../../gateway/routing/normalize.js";
import { RouteTable } from "../../gateway/routing/routes.js";

type RatesInput = GatewayConfigInput["rate_limits"];

/** A validated configuration with these routes and classes. */
function config(routes: string[], rateLimits: Partial<RatesInput> = {}) {
  return gatewayConfigSchema.parse({
    upstreams: { a: { url: "http://127.0.0.1:1" }, b: { url: "http://127.0.0.1:2" } },
    routes: routes.map((prefix, i) => ({ prefix, upstream: i % 2 === 0 ? "a" : "b" })),
    auth: { static: { tokens_file: "unused.yaml" } },
    rate_limits: { classes: { read: { windows: [{ limit: 1, window_s: 1 }] } }, ...rateLimits },
  });
}

const one = [{ limit: 1, window_s: 1 }];

describe("RouteTable", () => {
  const table = new RouteTable(config(["/", "/v1", "/v1/admin", "/v1/files/"]));
  const prefixOf = (path: string) => table.match(path)?.prefix;

  it.each([
    ["/v1/admin/users", "/v1/admin"],
    ["/v1/admin", "/v1/admin"],
    ["/v1/users", "/v1"],
    ["/v1", "/v1"],
    ["/v1/files/x", "/v1/files/"],
  ])("the longest prefix wins: %s goes to %s", (path, prefix) => {
    expect(prefixOf(path)).toBe(prefix);
  });

  it.each([
    ["/v10", "/"],
    ["/v1admin", "/"],
    ["/v1/administrators", "/v1"],
    ["/v1/files", "/v1"],
  ])("matches at a segment boundary only: %s goes to %s", (path, prefix) => {
    expect(prefixOf(path)).toBe(prefix);
  });

  it("sends everything else to the / route, and nothing matches without one", () => {
    expect(prefixOf("/")).toBe("/");
    expect(prefixOf("/anything/else")).toBe("/");
    const noRoot = new RouteTable(config(["/v1"]));
    expect(noRoot.match("/v2/x")).toBeUndefined();
    expect(noRoot.match("/")).toBeUndefined();
  });

  it("keeps upstream, scopes, strip_prefix and SPEC §17's settings of each route", () => {
    const parsed = gatewayConfigSchema.parse({
      upstreams: { a: { url: "http://127.0.0.1:1" } },
      routes: [{ prefix: "/v1", upstream: "a", scopes: ["read"], strip_prefix: true }],
      auth: { static: { tokens_file: "unused.yaml" } },
      rate_limits: { classes: { read: { windows: one } } },
    });
    expect(new RouteTable(parsed).match("/v1/x")).toEqual({
      prefix: "/v1",
      upstream: "a",
      scopes: ["read"],
      stripPrefix: true,
      timeoutMs: 0,
      maxBodyBytes: 0,
      retry: null,
      connectRetry: null,
    });
  });
});

describe("Classifier", () => {
  const classifier = new Classifier(
    config(["/"], {
      classes: {
        search: { match: { paths: ["/v1/search"] }, windows: one },
        export: { match: { methods: ["post"], paths: ["/v1/spaces/*/export"] }, windows: one },
        read: { match: { methods: ["GET", "HEAD"] }, windows: one },
        write: { match: { methods: ["POST", "PUT", "PATCH", "DELETE"] }, windows: one },
      },
    }),
  );

  it.each([
    ["GET", "/v1/search", "search"],
    ["POST", "/v1/search/saved", "search"],
    ["GET", "/v1/searching", "read"],
    ["POST", "/v1/spaces/s1/export", "export"],
    ["POST", "/v1/spaces/s1/export/csv", "export"],
    ["GET", "/v1/spaces/s1/export", "read"],
    ["POST", "/v1/spaces//export", "write"],
    ["POST", "/v1/spaces/a/b/export", "write"],
    ["HEAD", "/v1/user", "read"],
    ["DELETE", "/v1/user", "write"],
  ])("%s %s is %s (first match wins; methods and paths must both hold)", (method, path, cls) => {
    expect(classifier.classify(method, path)).toBe(cls);
  });

  it("falls back to the last class when nothing matches", () => {
    expect(classifier.defaultClass).toBe("write");
    expect(classifier.classify("OPTIONS", "/v1/user")).toBe("write");
  });

  it("falls back to default_class when configured", () => {
    const c = new Classifier(
      config(["/"], {
        classes: {
          read: { match: { methods: ["GET"] }, windows: one },
          other: { match: { methods: ["POST"] }, windows: one },
        },
        default_class: "read",
      }),
    );
    expect(c.classify("OPTIONS", "/x")).toBe("read");
    expect(c.classify("POST", "/x")).toBe("other");
  });
});

describe("normalizeTarget", () => {
  it.each([
    ["/v1/user", "/v1/user", "/v1/user", ""],
    ["/v1/user?q=1&r=%2e", "/v1/user", "/v1/user", "?q=1&r=%2e"],
    ["/v1/./search", "/v1/search", "/v1/search", ""],
    ["/v1/x/../search", "/v1/search", "/v1/search", ""],
    ["/v1/x/%2E%2e/search", "/v1/search", "/v1/search", ""],
    ["/v1/%73earch", "/v1/search", "/v1/%73earch", ""],
    ["/v1/a%2Fb", "/v1/a/b", "/v1/a%2Fb", ""],
    ["/v1/a%2f..%2fsearch", "/v1/search", "/v1/a%2f..%2fsearch", ""],
    ["/v1/a%5c..%5csearch", "/v1/search", "/v1/a%5c..%5csearch", ""],
    ["/v1/%252e%252e", "/v1/%2e%2e", "/v1/%252e%252e", ""],
    ["/v1/caf%C3%A9", "/v1/café", "/v1/caf%C3%A9", ""],
    ["/v1/..", "/", "/", ""],
    ["/../../etc/passwd", "/etc/passwd", "/etc/passwd", ""],
    ["/v1/search/.", "/v1/search/", "/v1/search/", ""],
  ])("%s matches as %s and is forwarded as %s", (url, matchPath, forwardPath, search) => {
    expect(normalizeTarget(url)).toEqual({ matchPath, forwardPath, search });
  });

  it.each([
    ["absolute form", "http://evil.example/v1/x"],
    ["authority form", "evil.example:443"],
    ["asterisk form", "*"],
    ["empty", ""],
    ["a raw backslash", "/v1/x\\..\\admin"],
    ["invalid UTF-8", "/v1/%ff"],
    ["an overlong encoding", "/v1/%c0%af"],
    ["an encoded surrogate", "/v1/%ed%a0%80"],
    ["an encoded NUL", "/v1/%00"],
    ["a truncated escape", "/v1/%4"],
    ["a non-hex escape", "/v1/%zz"],
  ])("refuses %s", (_name, url) => {
    expect(normalizeTarget(url)).toBeNull();
  });
});
