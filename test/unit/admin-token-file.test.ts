/**
 * `admin.token_file` (SPEC §21): its first line is the token, kept only as a SHA-256 digest; a
 * missing or empty file is a problem at `admin.token_file` (for `gateway check` and reloads too),
 * whose message names the file but never its content.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { readAdminTokenDigest } from "../../gateway/config/admin-token.js";
import { parseConfig } from "../../gateway/config/load.js";
import { checkFiles } from "../../gateway/server/config-files.js";
import { testConfig } from "../helpers/gateway.js";

const dir = mkdtempSync(path.join(tmpdir(), "gw-admin-token-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const configWith = (tokenFile: string | undefined) =>
  parseConfig(
    stringify(
      testConfig("http://127.0.0.1:1", {
        admin: { host: "127.0.0.1", port: 0, ...(tokenFile === undefined ? {} : { token_file: tokenFile }) },
      }),
    ),
    "test",
  );

describe("admin.token_file", () => {
  it("keeps the SHA-256 of the first line, trimmed", () => {
    writeFileSync(path.join(dir, "token"), "  s3cret-token \nsecond line\n");
    const digest = readAdminTokenDigest(configWith("token"), dir);
    expect(digest).toEqual(createHash("sha256").update("s3cret-token").digest());
    expect(readAdminTokenDigest(configWith(undefined), dir)).toBeNull();
  });

  it("reports a missing or empty file at its key, without the content", () => {
    writeFileSync(path.join(dir, "empty"), "\n");
    expect(checkFiles(configWith("missing"), dir)).toEqual([
      { segments: ["admin", "token_file"], message: expect.stringContaining('cannot read "missing"') },
    ]);
    expect(checkFiles(configWith("empty"), dir)).toEqual([
      { segments: ["admin", "token_file"], message: '"empty" holds no token on its first line' },
    ]);
    expect(checkFiles(configWith("token"), dir)).toEqual([]);
  });
});
