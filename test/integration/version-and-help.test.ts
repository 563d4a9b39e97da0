/**
 * One version everywhere (SPEC §20): `gateway --version` and `gateway version` print it
 * alone on stdout; it is package.json's, the latest in the changelog (CHANGELOG.md), the Kubernetes image
 * tag's (test/repository/image-and-manifests-agree.test.ts) and the `version` label of
 * `gateway_build_info`. `gateway help` prints the usage and exits 0 without asking for a file.
 */
import { existsSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/child-gateway.js";
import { runGateway } from "../helpers/gateway-command.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { request } from "../helpers/http.js";

const pkg = JSON.parse(readFileSync(`${REPO_ROOT}/package.json`, "utf8")) as { version: string };
let gw: TestGateway;

beforeAll(async () => {
  gw = await startGateway(testConfig("http://127.0.0.1:9"));
});
afterAll(() => gw.close());

describe("the version", () => {
  it("is the latest one in the changelog", () => {
    // CHANGELOG.md since the manual was split; before, the README's last section.
    const readme = readFileSync(`${REPO_ROOT}/README.md`, "utf8");
    const changelog = existsSync(`${REPO_ROOT}/CHANGELOG.md`)
      ? readFileSync(`${REPO_ROOT}/CHANGELOG.md`, "utf8")
      : readme.slice(readme.indexOf("\n## Changelog"));
    const latest = /^- (\d+\.\d+\.\d+)\b/m.exec(changelog)?.[1];
    expect(latest).toBe(pkg.version);
  });

  it("is what `gateway --version` and `gateway version` print, alone", async () => {
    const [flag, word] = await Promise.all([runGateway(["--version"]), runGateway(["version"])]);
    for (const r of [flag, word]) {
      expect(r.status).toBe(0);
      expect(r.stdout).toBe(`${pkg.version}\n`);
      expect(r.stderr).toBe("");
    }
  });

  it("is the version label of gateway_build_info", async () => {
    const res = await request(`${gw.adminUrl}/metrics`);
    expect(res.body).toMatch(new RegExp(`^gateway_build_info\\{version="${pkg.version}",`, "m"));
  });
});

describe("gateway help", () => {
  it("prints the usage of every command and exits 0, with or without a file", async () => {
    const [word, flag] = await Promise.all([
      runGateway(["help"], { env: { GATEWAY_CONFIG: undefined } }),
      runGateway(["--help"]),
    ]);
    for (const r of [word, flag]) {
      expect(r.status).toBe(0);
      for (const c of ["start", "check", "--strict", "--connect", "version", "npm run demo"])
        expect(r.stdout).toContain(c);
    }
  });
});
