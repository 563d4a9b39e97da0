/**
 * An `auth` block that names no token source (neither `introspection` nor `static`) is a
 * configuration error with a message that says what is missing, not a gateway that starts and then
 * answers every call 401: `gateway start` exits 1 before listening (`gateway check` reads the file
 * through the same loader: test/unit/config-errors.test.ts).
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/child-gateway.js";
import { FIXTURES } from "../helpers/gateway.js";

const file = path.join(FIXTURES, "config", "auth_without_source.yaml");
const MESSAGE =
  "  auth: expected a token source: `jwt` (JWT access tokens), `introspection` (an RFC 7662 endpoint) or `static` (a tokens file)" +
  " (line 6, col 3)\n";

describe("an auth block without a token source", () => {
  it("`gateway start` exits 1 before listening, naming the key and both sources", () => {
    const r = spawnSync(process.execPath, ["--import", "tsx", "gateway/main.ts", "start", "--config", file], {
      cwd: REPO_ROOT,
      encoding: "utf8",
      timeout: 20_000,
    });
    expect(r.status).toBe(1);
    // One JSON line (every line is JSON), no "gateway listening" line.
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toMatchObject({
      level: "fatal",
      msg: `invalid configuration ${file}:\n${MESSAGE.trimEnd()}`,
    });
  });
});
