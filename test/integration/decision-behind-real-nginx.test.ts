/**
 * SPEC §23 with a real nginx (Debian's, /usr/sbin/nginx, with ngx_http_auth_request_module) in
 * front: `config/edge/nginx-auth-request.conf`, the very file the manual quotes (docs/edge-proxy.md),
 * with its three addresses pointed at this test's gateway, service and a free port. Clients through nginx see what
 * they would see through the gateway itself (statuses, JSON bodies, `X-RateLimit-*`, `Retry-After`,
 * `WWW-Authenticate`), and the service receives the identity headers, never a client's copies.
 *
 * nginx runs as a child of the test (not a daemon) with its own prefix and temp directories, on
 * 127.0.0.1. Skipped, saying why, only when /usr/sbin/nginx is absent.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingHttpHeaders, Server } from "node:http";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePorts } from "../helpers/child-gateway.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request, type TestResponse } from "../helpers/http.js";
import { manualFiles } from "../helpers/manual.js";

const NGINX = "/usr/sbin/nginx";
const CONF = fileURLToPath(new URL("../../config/edge/nginx-auth-request.conf", import.meta.url));
const hasNginx = existsSync(NGINX);
if (!hasNginx)
  console.warn(`skipping decision-behind-real-nginx: ${NGINX} is absent (apt-get install nginx)`);

/** The file's addresses, each replaced by this test's. */
const ADDRESSES = {
  gateway: "server 127.0.0.1:8081;",
  app: "server 127.0.0.1:3000;",
  listen: "listen 80;",
} as const;

let dir: string;
let nginx: ChildProcess;
let nginxUrl: string;
let gw: TestGateway;
let app: { server: Server; url: string; port: number };
const seen: IncomingHttpHeaders[] = [];

/** The test's nginx.conf: the shipped file inside a minimal `http` block with private temp paths. */
function nginxConf(gatewayPort: number, appPort: number, port: number): string {
  let conf = readFileSync(CONF, "utf8");
  for (const [what, text] of Object.entries(ADDRESSES)) {
    if (conf.split(text).length !== 2) throw new Error(`${CONF}: expected "${text}" (${what}) once`);
  }
  conf = conf
    .replace(ADDRESSES.gateway, `server 127.0.0.1:${gatewayPort};`)
    .replace(ADDRESSES.app, `server 127.0.0.1:${appPort};`)
    .replace(ADDRESSES.listen, `listen 127.0.0.1:${port};`);
  return `worker_processes 1;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
${conf}
}
`;
}

/** Resolves once something accepts on 127.0.0.1:`port`, or rejects when nginx exits or 10 s pass. */
async function accepting(child: ChildProcess, port: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  let exited = false;
  child.once("exit", () => (exited = true));
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1");
      s.once("connect", () => {
        s.destroy();
        resolve(true);
      });
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    if (exited) throw new Error(`nginx exited: ${readFileSync(path.join(dir, "error.log"), "utf8")}`);
    if (Date.now() > deadline) throw new Error("nginx did not listen within 10 s");
    // Nothing announces nginx's bind: a bounded poll of the port.
    await new Promise((r) => setTimeout(r, 25));
  }
}

beforeAll(async () => {
  if (!hasNginx) return;
  dir = mkdtempSync(path.join(tmpdir(), "gateway-nginx-"));
  for (const sub of ["body", "proxy", "fastcgi", "uwsgi", "scgi", "logs"]) mkdirSync(path.join(dir, sub));
  app = await listen((req, res) => {
    seen.push(req.headers);
    // A service that sends its own rate-limit header: nginx must hide it.
    res.writeHead(200, { "content-type": "application/json", "x-ratelimit-limit": "999999" });
    res.end(`{"path":${JSON.stringify(req.url)}}`);
  });
  gw = await startGateway(
    testConfig(app.url, {
      listen: { host: "127.0.0.1", port: 0, enabled: false },
      decision: { listen: { host: "127.0.0.1", port: 0 } },
      routes: [
        { prefix: "/v1", upstream: "docs" },
        { prefix: "/admin", upstream: "docs", scopes: ["admin"] },
      ],
    }),
  );
  const [port] = (await freePorts(1)) as [number];
  const conf = path.join(dir, "nginx.conf");
  writeFileSync(conf, nginxConf(Number(new URL(gw.decisionUrl).port), app.port, port));
  nginx = spawn(
    NGINX,
    [
      "-p",
      dir,
      "-c",
      conf,
      "-e",
      path.join(dir, "error.log"),
      "-g",
      `daemon off; master_process off; pid ${dir}/nginx.pid;`,
    ],
    { stdio: "ignore" },
  );
  nginxUrl = `http://127.0.0.1:${port}`;
  await accepting(nginx, port);
});

afterAll(async () => {
  if (!hasNginx) return;
  if (nginx.exitCode === null) {
    const exited = new Promise((r) => nginx.once("exit", r));
    nginx.kill("SIGTERM");
    await exited;
  }
  await gw.close();
  await closeServer(app.server);
  rmSync(dir, { recursive: true, force: true });
});

/** The fields a client compares with the gateway's own answer (ids and times aside). */
function refusal(res: TestResponse) {
  return {
    status: res.status,
    body: res.body,
    type: res.headers["content-type"],
    challenge: res.headers["www-authenticate"],
    resource: res.headers["x-ratelimit-resource"],
    limit: res.headers["x-ratelimit-limit"],
  };
}

describe.skipIf(!hasNginx)("through nginx auth_request", () => {
  it("an allowed call reaches the service with the identity headers; the client gets the gateway's headers", async () => {
    const res = await request(`${nginxUrl}/v1/user?x=1`, {
      headers: { authorization: "Bearer valid-token", "x-auth-subject": "mallory" },
    });
    expect(res.status).toBe(200);
    expect(res.body).toBe('{"path":"/v1/user?x=1"}');
    expect(res.headers["x-ratelimit-limit"]).toBe("100");
    expect(res.headers["x-ratelimit-remaining"]).toBe("99");
    expect(res.headers["x-ratelimit-resource"]).toBe("read");
    expect(Number(res.headers["x-ratelimit-reset"])).toBeGreaterThan(Date.now() / 1000);
    const h = seen.at(-1)!;
    expect(h["x-auth-subject"]).toBe("alice");
    expect(h["x-auth-client-id"]).toBe("web");
    expect(h["x-auth-scope"]).toBe("read write");
    expect(h["x-request-id"]).toBe(res.headers["x-request-id"]);
    expect(h["x-request-id"]).toMatch(/^[0-9a-f]{32}$/);
  });

  it("a client without a token gets the gateway's 401: JSON body, WWW-Authenticate, rate-limit headers", async () => {
    const res = await request(`${nginxUrl}/v1/user`);
    expect(refusal(res)).toEqual({
      status: 401,
      body: '{"error":{"code":401,"message":"Authentication required"}}',
      type: "application/json; charset=utf-8",
      challenge: 'Bearer realm="api"',
      resource: "anonymous",
      limit: "20",
    });
    expect(res.headers["x-ratelimit-remaining"]).toMatch(/^\d+$/);
    expect(res.headers["x-gateway-status"]).toBeUndefined();
  });

  it("an unknown token: 401 invalid_token", async () => {
    const res = await request(`${nginxUrl}/v1/user`, { headers: { authorization: "Bearer nobody-token" } });
    expect(res.status).toBe(401);
    expect(res.body).toBe('{"error":{"code":401,"message":"Invalid or expired access token"}}');
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="api", error="invalid_token"');
  });

  it.each([
    [
      "a malformed Authorization (400)",
      "/v1/user",
      "Basic abc",
      400,
      '{"error":{"code":400,"message":"Malformed Authorization header"}}',
    ],
    ["no route (404)", "/nowhere", "Bearer valid-token", 404, '{"error":{"code":404,"message":"Not found"}}'],
    [
      "a missing scope (403)",
      "/admin/x",
      "Bearer reader-token",
      403,
      '{"error":{"code":403,"message":"Insufficient scope"}}',
    ],
  ] as const)(
    "%s: the real status and body, not nginx's 403 page",
    async (_what, target, authorization, status, body) => {
      const res = await request(`${nginxUrl}${target}`, { headers: { authorization } });
      expect(res.status).toBe(status);
      expect(res.body).toBe(body);
      expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(res.headers["x-ratelimit-limit"]).toBeDefined();
    },
  );

  it("the 429 with Retry-After and X-RateLimit-Remaining: 0 once the class is spent", async () => {
    const auth = { authorization: "Bearer client-token", "x-auth-subject": "mallory" };
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      statuses.push(
        (await request(`${nginxUrl}/v1/pages`, { method: "POST", headers: auth, body: "{}" })).status,
      );
    }
    expect(statuses).toEqual([200, 200, 200]);
    // A token without `sub`: the service gets no X-Auth-Subject, not the client's copy either.
    expect(seen.at(-1)!["x-auth-subject"]).toBeUndefined();
    expect(seen.at(-1)!["x-auth-client-id"]).toBe("svc");
    const res = await request(`${nginxUrl}/v1/pages`, { method: "POST", headers: auth, body: "{}" });
    expect(res.status).toBe(429);
    expect(res.headers["x-ratelimit-remaining"]).toBe("0");
    expect(res.headers["x-ratelimit-resource"]).toBe("write");
    const retryAfter = Number(res.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(res.body).toBe(
      `{"error":{"code":429,"message":"API rate limit exceeded. Please try again in ${retryAfter} seconds"}}`,
    );
    expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
  });
});

describe("the manual", () => {
  it("quotes config/edge/nginx-auth-request.conf verbatim", () => {
    const quoted = "```nginx\n" + readFileSync(CONF, "utf8") + "```\n";
    expect(
      manualFiles()
        .filter((f) => f.text.includes(quoted))
        .map((f) => f.path),
    ).toHaveLength(1);
  });
});
