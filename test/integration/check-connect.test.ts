/**
 * `gateway check` as a platform engineer runs it: every problem of a file in one pass
 * (a type error, a misspelt method, a broken reference and a missing file together); an unset
 * `${ENV}` secret is a warning (`--strict`: a problem); and `--connect` tries what the file names
 * against real servers — Redis with a password (`AUTH`, `SELECT`, `PING`), oidc-provider (discovery,
 * JWKS, introspection with the client credentials), an HTTP and an HTTPS upstream, the TLS files —
 * one line per attempt saying what answered, exit 1 when any fails, never a password.
 */
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { Server } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { freePorts } from "../helpers/child-gateway.js";
import { runGateway } from "../helpers/gateway-command.js";
import { TOKENS_FILE } from "../helpers/gateway.js";
import { closeServer, listen } from "../helpers/http.js";
import { AUDIENCE, signingKey, startJwtIdp, type JwtIdp } from "../helpers/jwt-idp.js";
import { GATEWAY_CLIENT_ID, GATEWAY_CLIENT_SECRET } from "../helpers/oidc.js";
import { cli, RedisServer, startCluster, startSentinel } from "../helpers/redis-server.js";
import { createPki, type TestPki } from "../helpers/tls.js";

const PASSWORD = "check-s3cret";
let dir: string;
let redis: RedisServer;
let idp: JwtIdp;
let pki: TestPki;
let plain: { server: Server; url: string };
let secure: HttpsServer;
let secureUrl: string;
let closedPort: number;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "gateway-check-"));
  pki = createPki();
  [redis, idp, plain, closedPort] = await Promise.all([
    // The password is set once the server answers (the helper's readiness check does not AUTH).
    RedisServer.start().then(async (r) => (await cli(r.port, "CONFIG", "SET", "requirepass", PASSWORD), r)),
    signingKey("check-key").then((k) => startJwtIdp([k])),
    listen((_req, res) => res.writeHead(200).end("ok")),
    freePorts(1).then((p) => p[0]!),
  ]);
  secure = createHttpsServer({ cert: pki.serverCert, key: pki.serverKey }, (_req, res) => res.end("ok"));
  await new Promise<void>((resolve) => secure.listen(0, "127.0.0.1", resolve));
  secureUrl = `https://127.0.0.1:${(secure.address() as { port: number }).port}`;
}, 60_000);

afterAll(async () => {
  await Promise.all([
    redis?.stop(),
    idp?.stop(),
    closeServer(plain.server),
    closeServer(secure as unknown as Server),
  ]);
  pki?.remove();
  rmSync(dir, { recursive: true, force: true });
});

function write(name: string, config: Record<string, unknown> | string): string {
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(file, typeof config === "string" ? config : stringify(config));
  return file;
}

/** A configuration naming the test servers; `over` replaces top-level keys. */
function config(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    upstreams: {
      plain: { url: plain.url },
      secure: { url: secureUrl, tls: { ca_file: pki.caFile } },
    },
    routes: [{ prefix: "/v1", upstream: "plain" }],
    auth: {
      jwt: { issuer: idp.issuer, audience: [AUDIENCE] },
      introspection: {
        url: idp.introspectionUrl,
        client_id: GATEWAY_CLIENT_ID,
        client_secret: GATEWAY_CLIENT_SECRET,
      },
    },
    rate_limits: {
      store: { redis: { url: `redis://:${PASSWORD}@127.0.0.1:${redis.port}/2` } },
      classes: { read: { windows: [{ limit: 10, window_s: 60 }] } },
    },
    ...over,
  };
}

const lineOf = (out: string, start: string): string =>
  out.split("\n").find((l) => l.trimStart().startsWith(start)) ?? "";

describe("gateway check", () => {
  it("reports a type error, a misspelt method, a broken reference and a missing file in one run", async () => {
    const file = write("one-pass", {
      ...config(),
      listen: { port: "eighty" },
      routes: [{ prefix: "/v1", upstream: "nowhere" }],
      auth: { static: { tokens_file: "missing-tokens.yaml" } },
      rate_limits: {
        classes: { read: { match: { methods: ["GETT"] }, windows: [{ limit: 1, window_s: 1 }] } },
      },
    });
    const r = await runGateway(["check", "--config", file]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("listen.port: expected a port number");
    expect(r.stderr).toContain("rate_limits.classes.read.match.methods[0]: expected an HTTP method name");
    expect(r.stderr).toContain('(did you mean "GET"?)');
    expect(r.stderr).toContain('routes[0].upstream: unknown upstream "nowhere"');
    expect(r.stderr).toContain('auth.static.tokens_file: cannot read "missing-tokens.yaml"');
  });

  it("accepts an unset ${ENV} secret with a warning naming it; --strict refuses it", async () => {
    const file = write("unset-env", {
      ...config(),
      auth: {
        introspection: {
          url: idp.introspectionUrl,
          client_id: "gateway",
          client_secret: "${CHECK_UNSET_SECRET}",
        },
      },
      rate_limits: { classes: { read: { windows: [{ limit: 10, window_s: 60 }] } } },
    });
    const env = { CHECK_UNSET_SECRET: undefined };
    const loose = await runGateway(["check", "--config", file], { env });
    expect(loose.status).toBe(0);
    expect(loose.stderr).toMatch(
      /^warning: auth\.introspection\.client_secret: environment variable CHECK_UNSET_SECRET is not set/m,
    );
    const strict = await runGateway(["check", "--strict", "--config", file], { env });
    expect(strict.status).toBe(1);
    expect(strict.stderr).toContain(
      "auth.introspection.client_secret: environment variable CHECK_UNSET_SECRET is not set",
    );
  });

  it("--connect tries Redis, the identity provider, each upstream and each TLS file, and says what answered", async () => {
    const r = await runGateway(["check", "--connect", "--config", write("all-good", config())], {
      timeoutMs: 40_000,
    });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const out = r.stdout;
    expect(lineOf(out, "ok   redis redis://:***@127.0.0.1")).toContain(
      "connected, AUTH ok, SELECT 2 ok, PING answered PONG",
    );
    expect(lineOf(out, "ok   discovery")).toContain(`jwks_uri ${idp.jwksUrl}`);
    expect(lineOf(out, "ok   JWKS")).toContain("1 keys: check-key");
    expect(lineOf(out, "ok   introspection")).toContain('answered 200 {"active":false}');
    expect(lineOf(out, "ok   upstream plain")).toContain("TCP connection accepted");
    expect(lineOf(out, "ok   upstream secure")).toContain("TCP and TLS ok");
    expect(lineOf(out, "ok   upstreams.secure.tls.ca_file")).toContain("Gateway Test CA, valid");
    expect(`${r.stdout}${r.stderr}`).not.toContain(PASSWORD);
  }, 60_000);

  it("--connect names each failure: a wrong Redis password, refused client credentials, a closed port, an unverifiable certificate", async () => {
    const file = write(
      "all-bad",
      config({
        upstreams: {
          closed: { url: `http://127.0.0.1:${closedPort}` },
          untrusted: { url: secureUrl },
        },
        routes: [{ prefix: "/v1", upstream: "closed" }],
        auth: {
          introspection: { url: idp.introspectionUrl, client_id: GATEWAY_CLIENT_ID, client_secret: "wrong" },
        },
        rate_limits: {
          store: { redis: { url: `redis://:not-the-password@127.0.0.1:${redis.port}` } },
          classes: { read: { windows: [{ limit: 10, window_s: 60 }] } },
        },
      }),
    );
    const r = await runGateway(["check", "--connect", "--config", file], { timeoutMs: 40_000 });
    expect(r.status).toBe(1);
    expect(lineOf(r.stdout, "FAIL redis")).toMatch(/WRONGPASS/);
    expect(lineOf(r.stdout, "FAIL introspection")).toContain("HTTP 401 (client_id or client_secret refused)");
    expect(lineOf(r.stdout, "FAIL upstream closed")).toContain("ECONNREFUSED");
    expect(lineOf(r.stdout, "FAIL upstream untrusted")).toMatch(/certificate/i);
    expect(r.stderr).toContain("4 of 4 attempts failed");
    expect(`${r.stdout}${r.stderr}`).not.toContain("not-the-password");
  }, 60_000);

  it("--connect says a Redis database index cannot be selected", async () => {
    const store = { redis: { url: `redis://127.0.0.1:${redis.port}/99`, password: PASSWORD } };
    const file = write("bad-db", {
      ...config(),
      auth: { static: { tokens_file: TOKENS_FILE } },
      upstreams: { plain: { url: plain.url } },
      rate_limits: { store, classes: { read: { windows: [{ limit: 10, window_s: 60 }] } } },
    });
    const r = await runGateway(["check", "--connect", "--config", file], { timeoutMs: 40_000 });
    expect(r.status).toBe(1);
    expect(lineOf(r.stdout, "FAIL redis")).toMatch(/AUTH ok, failed: .*DB index is out of range/);
  }, 60_000);
});

describe("gateway check --connect on Redis Cluster and Sentinel", () => {
  let cluster: Awaited<ReturnType<typeof startCluster>>;
  let sentinel: Awaited<ReturnType<typeof startSentinel>>;

  beforeAll(async () => {
    [cluster, sentinel] = await Promise.all([startCluster(), startSentinel("checkmaster")]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([cluster?.destroy(), sentinel?.destroy()]);
  });

  const withStore = (name: string, redisStore: Record<string, unknown>) =>
    write(name, {
      upstreams: { plain: { url: plain.url } },
      routes: [{ prefix: "/v1", upstream: "plain" }],
      auth: { static: { tokens_file: TOKENS_FILE } },
      rate_limits: {
        store: { redis: redisStore },
        classes: { read: { windows: [{ limit: 10, window_s: 60 }] } },
      },
    });

  it("asks each cluster seed for PING and its cluster state", async () => {
    const seeds = cluster.nodes.map((n) => n.url);
    const r = await runGateway(["check", "--connect", "--config", withStore("cluster", { cluster: seeds })]);
    expect(r.status).toBe(0);
    for (const n of cluster.nodes) {
      expect(lineOf(r.stdout, `ok   redis cluster node redis://127.0.0.1:${n.port}`)).toContain(
        "PING answered PONG, CLUSTER INFO says cluster_state:ok",
      );
    }
  }, 60_000);

  it("asks each sentinel for the primary, then tries that primary", async () => {
    const store = { sentinels: [sentinel.sentinel.url], name: "checkmaster" };
    const r = await runGateway(["check", "--connect", "--config", withStore("sentinel", store)]);
    expect(r.status).toBe(0);
    expect(lineOf(r.stdout, "ok   redis sentinel")).toContain(
      `get-master-addr-by-name checkmaster answered 127.0.0.1:${sentinel.primary.port}`,
    );
    expect(lineOf(r.stdout, `ok   redis redis://127.0.0.1:${sentinel.primary.port}`)).toContain(
      "PING answered PONG",
    );
    const wrong = { sentinels: [sentinel.sentinel.url], name: "nosuchmaster" };
    const bad = await runGateway(["check", "--connect", "--config", withStore("sentinel-wrong", wrong)]);
    expect(bad.status).toBe(1);
    expect(lineOf(bad.stdout, "FAIL redis sentinel")).toContain("nosuchmaster: unknown name");
  }, 60_000);
});
