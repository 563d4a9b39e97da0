/**
 * Configuration validation (SPEC §7): every problem reported at once, by key path, with the value
 * received and its YAML position. Fixtures are named after the failure they cause.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { describeConfig } from "../../gateway/cli/describe-config.js";
import { loadConfig, parseConfig } from "../../gateway/config/load.js";
import { configFixture, problemsOf } from "../helpers/config-problems.js";
import { FIXTURES } from "../helpers/gateway.js";

const fixture = configFixture;

describe("configuration errors name the key path", () => {
  it("bad_limit_not_integer", () => {
    expect(problemsOf("bad_limit_not_integer.yaml")).toEqual([
      "rate_limits.classes.read.windows[0].limit: expected a positive integer, received 1.5 @9:32",
    ]);
  });

  it("unknown_upstream", () => {
    expect(problemsOf("unknown_upstream.yaml")).toEqual([
      'routes[0].upstream: unknown upstream "dcos" (known: docs), received "dcos" @4:30',
    ]);
  });

  it("unknown_key suggests the closest known key, at the unknown key's own position", () => {
    expect(problemsOf("unknown_key.yaml")).toEqual([
      'upstreams.docs: unknown key "timeout" (did you mean "timeout_ms"?) @2:39',
    ]);
  });

  it("misspelt_algorithm", () => {
    expect(problemsOf("misspelt_algorithm.yaml")).toEqual([
      'rate_limits.classes.read: unknown key "algoritm" (did you mean "algorithm"?) @10:7',
    ]);
  });

  it("tracing_bad_endpoint_and_ratio: an OTLP/gRPC URL, a ratio above 1 and a misspelt key", () => {
    expect(problemsOf("tracing_bad_endpoint_and_ratio.yaml")).toEqual([
      'tracing.endpoint: expected an http:// or https:// URL (OTLP/HTTP, e.g. http://127.0.0.1:4318/v1/traces), received "grpc://127.0.0.1:4317" @11:13',
      "tracing.sample_ratio: expected a number from 0 to 1, received 1.5 @12:17",
      'tracing: unknown key "service_nam" (did you mean "service_name"?) @13:3',
    ]);
  });

  it("misspelt_top_level_key also leaves the real key missing", () => {
    expect(problemsOf("misspelt_top_level_key.yaml")).toEqual([
      "rate_limits: required",
      ': unknown key "rate_limit" (did you mean "rate_limits"?) @7:1',
    ]);
  });

  it("unknown_key_far_from_any lists the known keys instead of guessing", () => {
    expect(problemsOf("unknown_key_far_from_any.yaml")).toEqual([
      'routes[0]: unknown key "colour" (known: prefix, upstream, scopes, strip_prefix, timeout_ms, max_body_bytes, retries) @4:36',
    ]);
  });

  it("dotted_upstream_name: a key containing dots is quoted and keeps its line and column", () => {
    expect(problemsOf("dotted_upstream_name.yaml")).toEqual([
      'upstreams["docs.v2"].url: expected an http:// or https:// URL, received "ftp://files.example.com" @3:10',
      'upstreams["docs.v2"]: unknown key "keepalive_ms" (did you mean "keep_alive_ms"?) @4:5',
    ]);
  });

  it("auth_without_source", () => {
    expect(problemsOf("auth_without_source.yaml")).toEqual([
      "auth: expected a token source: `jwt` (JWT access tokens), `introspection` (an RFC 7662 endpoint) or `static` (a tokens file) @6:3",
    ]);
  });

  it("tokens_file_missing names the path as written and as resolved against the config's directory", () => {
    expect(problemsOf("tokens_file_missing.yaml")).toEqual([
      `auth.static.tokens_file: cannot read "no-such-tokens.yaml" (${fixture("no-such-tokens.yaml")}): ` +
        "ENOENT: no such file or directory @6:26",
    ]);
  });

  it("tokens_file_bad_entry names the tokens file's line and entry, never the token", () => {
    expect(problemsOf("tokens_file_bad_entry.yaml")).toEqual([
      'auth.static.tokens_file: ../tokens/bad-scope-type.yaml:5: "bad-…".scope: expected a space-separated ' +
        'string ("read write") or a list of scopes @6:26',
    ]);
  });

  it("listen_tls_cert_missing names each TLS file that cannot be read by its key path", () => {
    expect(problemsOf("listen_tls_cert_missing.yaml")).toEqual([
      `listen.tls.cert_file: cannot read no-such-cert.pem: ENOENT: no such file or directory, open '${fixture("no-such-cert.pem")}' @2:21`,
      `upstreams.docs.tls.ca_file: cannot read no-such-ca.pem: ENOENT: no such file or directory, open '${fixture("no-such-ca.pem")}' @4:56`,
    ]);
  });

  it("dotted_upstream_tls_file_missing places the TLS file under the dotted upstream name", () => {
    const problems = problemsOf("dotted_upstream_tls_file_missing.yaml");
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      /^upstreams\["docs\.v2"\]\.tls\.ca_file: cannot read no-such-ca\.pem: ENOENT.* @2:\d+$/,
    );
  });

  it("the tokens file is checked by `gateway check` only: loading for `start` leaves it to the runtime", () => {
    expect(() => loadConfig(fixture("tokens_file_missing.yaml"), {})).not.toThrow();
  });

  it("missing_env_secret names the variable, not a secondary schema error", () => {
    expect(problemsOf("missing_env_secret.yaml")).toEqual([
      "auth.introspection.client_secret: environment variable GATEWAY_TEST_UNSET_SECRET is not set @9:20",
    ]);
  });

  it("missing_env_secret is fine once the variable is set, and the secret is interpolated", () => {
    const { config } = loadConfig(fixture("missing_env_secret.yaml"), {
      GATEWAY_TEST_UNSET_SECRET: "s3cret",
    });
    expect(config.auth.introspection?.client_secret).toBe("s3cret");
  });

  it("both_auth_sources", () => {
    expect(problemsOf("both_auth_sources.yaml")).toEqual([
      "auth: expected one of `jwt`, `introspection` or `static`, or `jwt` beside one of the other two @6:3",
    ]);
  });

  it("jwt_hmac_algorithm_and_no_audience", () => {
    expect(problemsOf("jwt_hmac_algorithm_and_no_audience.yaml")).toEqual([
      "auth.jwt.audience: expected at least one audience, received [] @8:15",
      'auth.jwt.algorithms[1]: expected an asymmetric JWS algorithm (RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA, Ed25519); none and HS* are refused, received "HS256" @9:25',
    ]);
  });

  it("redis_sentinel_without_name", () => {
    expect(problemsOf("redis_sentinel_without_name.yaml")).toEqual([
      "rate_limits.store.redis.name: required with `sentinels`",
    ]);
  });

  it("invalid_yaml_syntax", () => {
    expect(problemsOf("invalid_yaml_syntax.yaml")).toEqual([
      ": YAML: Flow map in block collection must be sufficiently indented and end with a } @3:1",
    ]);
  });

  it("several_problems are all reported at once", () => {
    expect(problemsOf("several_problems.yaml")).toEqual([
      "listen.port: expected a port number (0-65535), received 99999 @1:17",
      'upstreams.docs.url: expected an http:// or https:// URL, received "ftp://files.example.com" @3:16',
      'routes[0].prefix: expected a path prefix starting with /, received "v1" @5:15',
      'rate_limits.failure_mode: expected one of "open", "closed", received "sometimes" @9:17',
      "rate_limits.classes.read.windows: expected at least one window, received [] @11:22",
      "rate_limits.classes.write.windows[0].limit: expected a positive integer, received 0 @12:61",
    ]);
  });
});

describe("a valid configuration", () => {
  it("gets the documented defaults and is deeply frozen", () => {
    const { config } = loadConfig(fixture("valid_minimal.yaml"), {});
    expect(config.listen).toMatchObject({ host: "0.0.0.0", port: 8080, grace_ms: 10_000 });
    expect(config.admin).toEqual({ host: "0.0.0.0", port: 9090 });
    expect(config.rate_limits).toMatchObject({
      failure_mode: "open",
      expected_replicas: 1,
      status_path: "/rate_limit",
    });
    expect(config.rate_limits.classes.read).toMatchObject({ algorithm: "sliding_window", mode: "enforce" });
    expect(config.upstreams.docs).toMatchObject({ timeout_ms: 30_000 });
    expect(config.auth.realm).toBe("api");
    expect(Object.isFrozen(config.rate_limits.classes.read!.windows[0])).toBe(true);
    expect(() => {
      (config.listen as { port: number }).port = 1;
    }).toThrow(TypeError);
  });

  it("takes jwt beside introspection, with SPEC §11's defaults", () => {
    const { config } = loadConfig(fixture("valid_jwt_beside_introspection.yaml"), {});
    expect(config.auth.introspection).toBeDefined();
    expect(config.auth.jwt).toEqual({
      issuer: "https://idp.example.com/",
      audience: ["https://api.example.com"],
      algorithms: ["RS256", "PS256", "ES256", "EdDSA"],
      leeway_s: 30,
      timeout_ms: 2000,
      jwks_refresh_s: 300,
      cache: { max_entries: 100_000, max_ttl_s: 300, negative_ttl_s: 10 },
    });
    expect(describeConfig(config)).toContain("auth: jwt (issuer https://idp.example.com/) + introspection");
  });

  it("upper-cases methods and supports ${VAR:-default}", () => {
    const config = parseConfig(
      [
        "upstreams: { docs: { url: 'http://${UP_HOST:-127.0.0.1}:3000' } }",
        "routes: [{ prefix: /v1, upstream: docs }]",
        "auth: { static: { tokens_file: t.yaml } }",
        "rate_limits: { classes: { write: { match: { methods: [post] }, windows: [{ limit: 1, window_s: 1 }] } } }",
      ].join("\n"),
      "inline",
      {},
    );
    expect(config.upstreams.docs!.url).toBe("http://127.0.0.1:3000");
    expect(config.rate_limits.classes.write!.match.methods).toEqual(["POST"]);
  });

  it("the shipped example and demo configurations are valid", () => {
    for (const file of ["gateway.example.yaml", "demo.yaml"]) {
      expect(() =>
        loadConfig(path.join(FIXTURES, "..", "..", "config", file), { INTROSPECTION_CLIENT_SECRET: "x" }),
      ).not.toThrow();
    }
  });
});

describe("gateway check", () => {
  const NO_OTEL = {
    OTEL_EXPORTER_OTLP_ENDPOINT: "",
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "",
    OTEL_SERVICE_NAME: "",
  };
  const run = (file: string, env: NodeJS.ProcessEnv = {}) =>
    spawnSync(process.execPath, ["--import", "tsx", "gateway/main.ts", "check", "--config", file], {
      encoding: "utf8",
      env: { ...process.env, ...env },
    });

  it("prints routes and classes of a valid file and exits 0", () => {
    const r = run(fixture("valid_minimal.yaml"), NO_OTEL);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("/v1");
    expect(r.stdout).toMatch(/read\s+10\/1s/);
    expect(r.stdout).toContain("tracing: off");
  });

  it("names the traces endpoint the environment turns on", () => {
    const r = run(fixture("valid_minimal.yaml"), {
      ...NO_OTEL,
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
    });
    expect(r.stdout).toContain("tracing: http://collector:4318/v1/traces, sample_ratio 1, service gateway");
  });

  it("exits 1 listing every problem", () => {
    const r = run(fixture("several_problems.yaml"));
    expect(r.status).toBe(1);
    expect(r.stderr.match(/^ {2}\S/gm)?.length).toBe(6);
  });

  it("loads and validates the static tokens file the configuration names", () => {
    const file = fixture("tokens_file_bad_entry.yaml");
    const r = run(file);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      `invalid configuration ${file}:\n` +
        '  auth.static.tokens_file: ../tokens/bad-scope-type.yaml:5: "bad-…".scope: expected a ' +
        'space-separated string ("read write") or a list of scopes (line 6, col 26)\n',
    );
  });
});
