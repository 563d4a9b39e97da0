/**
 * `gateway check --connect` asks each endpoint its health-check path as the probes will (SPEC §16:
 * a 2xx or 3xx within `health_check.timeout_ms`), so a wrong path fails the check rather than
 * marking every endpoint unhealthy in production.
 */
import type { Server } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { runGateway } from "../helpers/gateway-command.js";
import { TOKENS_FILE } from "../helpers/gateway.js";
import { closeServer, listen } from "../helpers/http.js";

let dir: string;
let upstream: { server: Server; url: string };

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "gateway-check-health-"));
  upstream = await listen((req, res) => res.writeHead(req.url === "/base/health" ? 200 : 404).end());
});
afterAll(async () => {
  await closeServer(upstream.server);
  rmSync(dir, { recursive: true, force: true });
});

function configWith(healthPath: string): string {
  const file = path.join(dir, `${healthPath.replace(/\W/g, "")}.yaml`);
  writeFileSync(
    file,
    stringify({
      upstreams: {
        docs: {
          endpoints: [{ url: `${upstream.url}/base` }],
          health_check: { path: healthPath, interval_ms: 1000, timeout_ms: 500 },
        },
      },
      routes: [{ prefix: "/v1", upstream: "docs" }],
      auth: { static: { tokens_file: TOKENS_FILE } },
      rate_limits: { classes: { read: { windows: [{ limit: 10, window_s: 60 }] } } },
    }),
  );
  return file;
}

describe("gateway check --connect with a health check", () => {
  it("passes when the path answers 2xx, saying so", async () => {
    const r = await runGateway(["check", "--connect", "--config", configWith("/health")]);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(
      /ok {3}upstream docs .*TCP connection accepted; health check GET \/base\/health answered 200/,
    );
  }, 30_000);

  it("fails when it does not, naming the path and the answer", async () => {
    const r = await runGateway(["check", "--connect", "--config", configWith("/healthz")]);
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/FAIL upstream docs .*health check GET \/base\/healthz answered 404/);
  }, 30_000);
});
