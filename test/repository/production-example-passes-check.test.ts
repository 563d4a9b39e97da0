/**
 * `config/production.example.yaml` (a realistic deployment: Sentinel, a pool of three with health
 * checks and retries, plans with quotas and an organisation budget, shedding, the watch, TLS) passes
 * `gateway check`, with its secrets and certificate files given by the environment as a Secret would.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runGateway } from "../helpers/gateway-command.js";
import { createPki, type TestPki } from "../helpers/tls.js";

let pki: TestPki;
beforeAll(() => {
  pki = createPki();
});
afterAll(() => pki.remove());

describe("config/production.example.yaml", () => {
  it("passes gateway check --strict, its secrets and files from the environment", async () => {
    const r = await runGateway(["check", "--strict", "--config", "config/production.example.yaml"], {
      env: {
        TLS_CERT_FILE: pki.serverCertFile,
        TLS_KEY_FILE: pki.serverKeyFile,
        INTROSPECTION_CLIENT_SECRET: "s3cret",
        REDIS_PASSWORD: "s3cret",
      },
    });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("store: redis");
    expect(r.stdout).not.toContain("s3cret");
  }, 30_000);
});
