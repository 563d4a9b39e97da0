/**
 * SPEC §8: "the `Authorization` header and tokens are redacted everywhere". The gateway runs as
 * it does in production (`node --import tsx gateway/main.ts start --config FILE`, a child process,
 * logging at trace/debug); the test sends calls carrying known tokens (a valid one, an invalid
 * one, a token-like string in a malformed header, one in `?access_token=`), stops it with SIGTERM
 * and searches every byte it wrote to stdout and stderr: none of them may appear. The access line
 * carries the SPEC §8 fields. A second variant reads its introspection `client_secret` from
 * `${ENV}`: the secret must not appear either, not even in the error of a rejected reload.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { closeServer, listen, REFUSED_PORT, request } from "../helpers/http.js";
import { parsePrometheusText } from "../helpers/prom.js";
import { freePort, waitFor } from "../helpers/redis-server.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

function secret(label: string): string {
  return `${label}${randomBytes(18).toString("base64url")}`;
}

interface ChildGateway {
  url: string;
  adminUrl: string;
  proc: ChildProcess;
  /** SIGTERM, then everything written to stdout and stderr, and the exit code. */
  stop(): Promise<{ output: Buffer; stdout: string; code: number | null }>;
}

/** Starts `gateway start --config FILE` on free ports and waits until `/healthz` answers. */
async function startChild(
  dir: string,
  config: Record<string, unknown>,
  env: Record<string, string> = {},
): Promise<ChildGateway & { configFile: string }> {
  const [apiPort, adminPort] = [await freePort(), await freePort()];
  const configFile = path.join(dir, "gateway.yaml");
  writeFileSync(
    configFile,
    stringify({
      ...config,
      listen: { host: "127.0.0.1", port: apiPort, grace_ms: 1000 },
      admin: { host: "127.0.0.1", port: adminPort },
    }),
  );
  const proc = spawn(
    process.execPath,
    ["--import", "tsx", "gateway/main.ts", "start", "--config", configFile],
    {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  proc.stdout!.on("data", (c: Buffer) => stdout.push(c));
  proc.stderr!.on("data", (c: Buffer) => stderr.push(c));
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  const closed = new Promise<void>((resolve) => proc.once("close", () => resolve()));
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  await waitFor(
    "the gateway's /healthz",
    async () => {
      if (proc.exitCode !== null) {
        throw new Error(`gateway exited ${proc.exitCode}: ${Buffer.concat(stderr).toString()}`);
      }
      return (await request(`${adminUrl}/healthz`)).status === 200;
    },
    20_000,
  ).catch((err: unknown) => {
    proc.kill("SIGKILL");
    throw new Error(`${String(err)}\n${Buffer.concat(stderr).toString()}`);
  });
  return {
    url: `http://127.0.0.1:${apiPort}`,
    adminUrl,
    proc,
    configFile,
    async stop() {
      proc.kill("SIGTERM");
      const code = await exited;
      await closed; // every byte of both pipes has been read
      return {
        output: Buffer.concat([...stdout, ...stderr]),
        stdout: Buffer.concat(stdout).toString("utf8"),
        code,
      };
    },
  };
}

function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe("log redaction (static tokens, trace level)", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "log-redaction-"));
  const VALID = secret("valid");
  const INVALID = secret("invalid");
  const IN_MALFORMED = secret("malformed");
  const IN_BASIC = secret("basic");
  const IN_QUERY = secret("query");
  const SUB = "redaction-alice";
  let upstream: { server: Server; url: string };
  let stopped: { output: Buffer; stdout: string; code: number | null };
  const statuses: Record<string, number> = {};

  beforeAll(async () => {
    upstream = await listen((req, res) => {
      req.resume();
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
    // Nothing listens on a port of this worker's own range (a released ephemeral port may be reused).
    const dead = { url: `http://127.0.0.1:${REFUSED_PORT}` };
    writeFileSync(path.join(dir, "tokens.yaml"), stringify({ [VALID]: { sub: SUB, scope: "read write" } }));
    const gw = await startChild(dir, {
      upstreams: { docs: { url: upstream.url }, dead: { url: dead.url, connect_timeout_ms: 500 } },
      routes: [
        { prefix: "/v1", upstream: "docs" },
        { prefix: "/dead", upstream: "dead" },
      ],
      auth: { realm: "api", static: { tokens_file: "tokens.yaml" } },
      rate_limits: {
        classes: {
          read: { match: { methods: ["GET", "HEAD"] }, windows: [{ limit: 100, window_s: 3600 }] },
          write: { windows: [{ limit: 100, window_s: 3600 }] },
        },
        anonymous: { windows: [{ limit: 100, window_s: 3600 }] },
      },
      log: { level: "trace" },
    });
    const call = async (name: string, target: string, authorization?: string) => {
      const headers: Record<string, string> = { "x-request-id": `redaction-${name}` };
      if (authorization !== undefined) headers.authorization = authorization;
      statuses[name] = (await request(`${gw.url}${target}`, { headers })).status;
    };
    await call("valid", "/v1/items", `Bearer ${VALID}`);
    await call("invalid", "/v1/items", `Bearer ${INVALID}`);
    await call("malformed", "/v1/items", `Bearer ${IN_MALFORMED} trailing`);
    await call("basic", "/v1/items", `Basic ${IN_BASIC}`);
    await call("query", `/v1/items?access_token=${IN_QUERY}`);
    await call("query-valid", `/v1/items?access_token=${IN_QUERY}&x=1`, `Bearer ${VALID}`);
    await call("dead", "/dead/x", `Bearer ${VALID}`);
    stopped = await gw.stop();
  });

  afterAll(async () => {
    await closeServer(upstream.server);
    rmSync(dir, { recursive: true, force: true });
  });

  it("answered each call as SPEC §2 says, and exited 0 on SIGTERM", () => {
    expect(statuses).toEqual({
      valid: 200,
      invalid: 401,
      malformed: 400,
      basic: 400,
      query: 401,
      "query-valid": 200,
      dead: 502,
    });
    expect(stopped.code).toBe(0);
  });

  it.each([
    ["the valid token", () => VALID],
    ["the invalid token", () => INVALID],
    ["the token-like string in a malformed Bearer header", () => IN_MALFORMED],
    ["the Basic credentials", () => IN_BASIC],
    ["the access_token query parameter", () => IN_QUERY],
  ])("never writes %s to stdout or stderr", (_what, value) => {
    expect(stopped.output.length).toBeGreaterThan(0);
    expect(stopped.output.includes(value())).toBe(false);
  });

  it("writes one access line per call with the SPEC §8 fields on that line", () => {
    const access = jsonLines(stopped.stdout).filter((l) => l.msg === "request");
    expect(access.map((l) => l.reqId).sort()).toEqual(
      Object.keys(statuses)
        .map((n) => `redaction-${n}`)
        .sort(),
    );
    const valid = access.find((l) => l.reqId === "redaction-valid")!;
    expect(valid).toMatchObject({
      level: "info",
      reqId: "redaction-valid",
      method: "GET",
      path: "/v1/items",
      route: "/v1",
      class: "read",
      status: 200,
      identity: SUB,
      remaining: 99,
    });
    expect(valid.durationMs).toEqual(expect.any(Number));
    expect(valid.upstreamMs).toEqual(expect.any(Number));
    for (const field of [
      "reqId",
      "method",
      "path",
      "route",
      "class",
      "status",
      "durationMs",
      "identity",
      "remaining",
    ]) {
      expect(valid, field).toHaveProperty(field);
    }
    const queried = access.find((l) => l.reqId === "redaction-query")!;
    expect(queried).toMatchObject({ path: "/v1/items", class: "anonymous", status: 401, identity: null });
  });
});

describe("log redaction of an introspection client_secret read from ${ENV}", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "log-redaction-secret-"));
  const SECRET = secret("clientsecret");
  const TOKEN = secret("bearer");
  let upstream: { server: Server; url: string };
  let stopped: { output: Buffer; stdout: string; code: number | null };
  let status = 0;

  beforeAll(async () => {
    upstream = await listen((_req, res) => res.writeHead(200).end("ok"));
    const unreachable = await listen(() => {});
    await closeServer(unreachable.server);
    const config = {
      upstreams: { docs: { url: upstream.url } },
      routes: [{ prefix: "/v1", upstream: "docs" }],
      auth: {
        realm: "api",
        introspection: {
          url: `${unreachable.url}/oauth2/introspect`,
          client_id: "gateway",
          client_secret: "${GATEWAY_TEST_CLIENT_SECRET}",
          timeout_ms: 500,
        },
      },
      rate_limits: { classes: { read: { windows: [{ limit: 100, window_s: 3600 }] } } },
      log: { level: "debug" },
    };
    const gw = await startChild(dir, config, { GATEWAY_TEST_CLIENT_SECRET: SECRET });
    status = (await request(`${gw.url}/v1/items`, { headers: { authorization: `Bearer ${TOKEN}` } })).status;
    // A rejected reload reports its problems; the secret sits beside the broken key.
    writeFileSync(
      gw.configFile,
      stringify({
        ...config,
        auth: { ...config.auth, introspection: { ...config.auth.introspection, timeout_ms: -1 } },
      }),
    );
    gw.proc.kill("SIGHUP");
    await waitFor("the rejected reload", async () => {
      const metrics = parsePrometheusText((await request(`${gw.adminUrl}/metrics`)).body);
      return metrics.value("gateway_config_reloads_total", { result: "error" }) === 1;
    });
    stopped = await gw.stop();
  });

  afterAll(async () => {
    await closeServer(upstream.server);
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers 503 while the introspection endpoint is unreachable, logging why", () => {
    expect(status).toBe(503);
    expect(stopped.code).toBe(0);
    const lines = jsonLines(stopped.stdout);
    expect(lines.some((l) => String(l.msg).startsWith("introspection source unavailable"))).toBe(true);
    expect(lines.some((l) => String(l.msg).startsWith("configuration reload rejected"))).toBe(true);
  });

  it("never writes the client secret or the token to stdout or stderr", () => {
    expect(stopped.output.includes(SECRET)).toBe(false);
    expect(stopped.output.includes(TOKEN)).toBe(false);
    // Nor the HTTP Basic credentials built from it.
    const basic = Buffer.from(`gateway:${SECRET}`).toString("base64");
    expect(stopped.output.includes(basic)).toBe(false);
  });
});
