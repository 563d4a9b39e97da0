/**
 * `GATEWAY_CONFIG` names the configuration file when `--config` is not given (`gateway start`, the
 * Docker image and the Kubernetes manifest rely on it), `--config` wins when both are given, and
 * `gateway check` reads it too. Real child processes; the routes prove which file was read (the
 * bundled demo configuration has no `/from-env` route and listens on 8080).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { childConfig, REPO_ROOT, spawnGateway, type ChildGateway } from "../helpers/child-gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";

const auth = { authorization: "Bearer valid-token" };
let upstream: { server: Server; url: string };
let viaEnv: ChildGateway;
let flagWins: ChildGateway;

beforeAll(async () => {
  upstream = await listen((req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end(`upstream saw ${req.url}`);
  });
  const config = (ports: { apiPort: number; adminPort: number }) =>
    childConfig(upstream.url, ports, { routes: [{ prefix: "/from-env", upstream: "docs" }] });
  [viaEnv, flagWins] = await Promise.all([
    spawnGateway(config, { configVia: "env" }),
    spawnGateway(config, { env: { GATEWAY_CONFIG: "/nonexistent/gateway.yaml" } }),
  ]);
});

afterAll(async () => {
  await Promise.all([viaEnv?.dispose(), flagWins?.dispose()]);
  await closeServer(upstream.server);
});

describe("GATEWAY_CONFIG", () => {
  it("`gateway start` without --config serves the file GATEWAY_CONFIG names", async () => {
    const res = await request(`${viaEnv.url}/from-env/x`, { headers: auth });
    expect(res.status).toBe(200);
    expect(res.body).toBe("upstream saw /from-env/x");
    expect((await request(`${viaEnv.url}/v1/user`, { headers: auth })).status).toBe(404);
    const listening = await viaEnv.waitForLine((l) => l.msg === "gateway listening");
    expect(listening).toMatchObject({ apiPort: viaEnv.apiPort, adminPort: viaEnv.adminPort });
  });

  it("--config wins over GATEWAY_CONFIG", async () => {
    const res = await request(`${flagWins.url}/from-env/y`, { headers: auth });
    expect(res.status).toBe(200);
    expect(res.body).toBe("upstream saw /from-env/y");
  });

  it("`gateway check` without --config validates the file GATEWAY_CONFIG names", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "gateway-env-check-"));
    try {
      const file = path.join(dir, "gateway.yaml");
      const tokens = path.join(REPO_ROOT, "test/fixtures/gateway-tokens.yaml");
      writeFileSync(
        file,
        stringify({
          upstreams: { docs: { url: upstream.url } },
          routes: [{ prefix: "/from-env", upstream: "docs" }],
          auth: { static: { tokens_file: tokens } },
          rate_limits: { classes: { read: { windows: [{ limit: 1, window_s: 1 }] } } },
        }),
      );
      const r = spawnSync(process.execPath, ["--import", "tsx", "gateway/main.ts", "check"], {
        cwd: REPO_ROOT,
        encoding: "utf8",
        env: { ...process.env, GATEWAY_CONFIG: file },
        timeout: 20_000,
      });
      expect(r.stderr).toBe("");
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: OK\\n`));
      expect(r.stdout).toContain("/from-env");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
