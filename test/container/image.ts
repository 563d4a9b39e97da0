/**
 * What the image holds: production dependencies only, no test files, no .git, no trace of the build
 * secret; the Kubernetes ConfigMap's gateway.yaml passes `gateway check` inside it; and its size.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import type { Checks } from "./fixtures.js";
import type { Run } from "./memory-store.js";
import { inspect, podman, podmanOk } from "./podman.js";

/** Runs inside the image: lists what should not be there. argv[1]: JSON list of dev-only paths. */
const SCAN = `
const fs = require("fs"), path = require("path");
const devOnly = JSON.parse(process.argv[1]);
const found = { dev: devOnly.filter((p) => fs.existsSync(path.join("/app", p))), tests: [], git: [], secrets: [] };
let budget = 200000;
(function walk(dir) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (--budget < 0) throw new Error("too many files under /app");
    const p = path.join(dir, e.name);
    if (e.name === ".git") found.git.push(p);
    if (!p.startsWith("/app/node_modules/")) {
      if (/\\.(test|spec)\\.[cm]?[jt]s$/.test(e.name) || p === "/app/test" || p === "/app/dist/test") found.tests.push(p);
    }
    if (e.isDirectory() && !e.isSymbolicLink()) walk(p);
  }
})("/app");
for (const p of ["/root/.npmrc", "/home/node/.npmrc", "/run/secrets/npmrc"]) if (fs.existsSync(p)) found.secrets.push(p);
console.log(JSON.stringify(found));
`;

/** Paths under node_modules that the lockfile marks dev-only (top level and nested). */
function devOnlyPaths(root: string): string[] {
  const lock = JSON.parse(readFileSync(path.join(root, "package-lock.json"), "utf8")) as {
    packages: Record<string, { dev?: boolean }>;
  };
  return Object.entries(lock.packages)
    .filter(([p, meta]) => p.startsWith("node_modules/") && meta.dev === true)
    .map(([p]) => p);
}

function megabytes(bytes: number): string {
  return `${(bytes / 1e6).toFixed(0)} MB`;
}

export async function imageChecks(run: Run, root: string, baseImage: string, checks: Checks): Promise<void> {
  await checks.check(
    "the image holds no dev dependencies, no test files, no .git, no npm secret",
    async () => {
      const devOnly = devOnlyPaths(root);
      assert.ok(devOnly.length > 10, "package-lock.json lists no dev dependencies");
      const out = await podmanOk(
        ["run", "--rm", "--network", "none", run.image, "node", "-e", SCAN, JSON.stringify(devOnly)],
        60_000,
        false,
      );
      const found = JSON.parse(out) as Record<string, string[]>;
      assert.deepEqual(found, { dev: [], tests: [], git: [], secrets: [] });
      const prod = await podmanOk(
        [
          "run",
          "--rm",
          "--network",
          "none",
          run.image,
          "sh",
          "-c",
          "ls -A /app; ls -A /app/node_modules/.bin 2>/dev/null; true",
        ],
        60_000,
        false,
      );
      assert.doesNotMatch(prod, /\b(tsc|vitest|eslint|tsx)\b/);
      assert.match(prod, /\bdist\b/);
    },
  );

  await checks.check(
    "the Kubernetes ConfigMap's gateway.yaml passes `gateway check` in the image",
    async () => {
      const text = readFileSync(path.join(root, "config/kubernetes/configmap.yaml"), "utf8");
      const cm = parseAllDocuments(text)
        .map((d) => d.toJS() as { kind?: string; data?: Record<string, string> })
        .find((d) => d.kind === "ConfigMap");
      const file = path.join(run.workDir, "configmap-gateway.yaml");
      writeFileSync(file, cm?.data?.["gateway.yaml"] ?? "", { mode: 0o644 });
      const r = await podman([
        "run",
        "--rm",
        "--network",
        "none",
        "-e",
        "INTROSPECTION_CLIENT_SECRET=test-secret",
        "-v",
        `${file}:/etc/gateway/gateway.yaml:ro`,
        run.image,
        "node",
        "dist/gateway/main.js",
        "check",
        "--config",
        "/etc/gateway/gateway.yaml",
      ]);
      assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    },
  );

  await checks.check("image size reported", async () => {
    const size = Number(await inspect("image", run.image, "{{.Size}}"));
    const base = Number(await inspect("image", baseImage, "{{.Size}}"));
    assert.ok(size > base, `image ${size} B is not larger than its base ${base} B`);
    console.log(
      `      ${run.image}: ${megabytes(size)} (base ${baseImage}: ${megabytes(base)}, ` +
        `the gateway's layers: ${megabytes(size - base)})`,
    );
  });
}
