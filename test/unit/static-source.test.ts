import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { StaticTokenSource, loadStaticTokens } from "../../gateway/auth/static-source.js";

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/tokens");
const fixture = (name: string): string => path.join(fixtures, name);

describe("StaticTokenSource", () => {
  const source = new StaticTokenSource("valid.yaml", fixtures);

  it("answers a plaintext entry with every field, splitting a scope string", async () => {
    await expect(source.introspect("alice-dev-token")).resolves.toEqual({
      active: true,
      sub: "alice",
      clientId: "web",
      username: "alice@example.com",
      scope: ["read", "write"],
      exp: 4102444800,
    });
  });

  it("answers a sha256: entry (upper-case hex) for the plaintext token, with a scope list", async () => {
    await expect(source.introspect("hashed-dev-token")).resolves.toEqual({
      active: true,
      clientId: "batch",
      scope: ["read", "export"],
    });
  });

  it("does not accept the sha256: key itself as a token", async () => {
    const key = "sha256:78f7fc718beeb5ea6623f42461af47af0c447df08e6eddc966cbb4b9cecf0d73";
    await expect(source.introspect(key)).resolves.toEqual({ active: false, scope: [] });
  });

  it("reports `active: false` entries and unknown tokens as inactive", async () => {
    await expect(source.introspect("revoked-dev-token")).resolves.toMatchObject({ active: false });
    await expect(source.introspect("no-such-token")).resolves.toEqual({ active: false, scope: [] });
    await expect(source.introspect("")).resolves.toEqual({ active: false, scope: [] });
  });

  it("resolves the file against baseDir and accepts an absolute path", async () => {
    const absolute = new StaticTokenSource(fixture("valid.yaml"), "/nonexistent");
    await expect(absolute.introspect("alice-dev-token")).resolves.toMatchObject({ sub: "alice" });
  });

  it("hands out frozen entries, so a caller cannot alter the next answer", async () => {
    const info = await source.introspect("alice-dev-token");
    expect(Object.isFrozen(info)).toBe(true);
    expect(Object.isFrozen(info.scope)).toBe(true);
  });

  it("accepts the field named by plan_claim and keeps it in `claims`", async () => {
    const withPlans = new StaticTokenSource("plan-claims.yaml", fixtures, ["plan"]);
    await expect(withPlans.introspect("pro-dev-token")).resolves.toEqual({
      active: true,
      sub: "carol",
      scope: ["read"],
      claims: { plan: "pro" },
    });
    await expect(withPlans.introspect("free-dev-token")).resolves.not.toHaveProperty("claims");
    // Without plan_claim the field is a typo like any other.
    expect(() => loadStaticTokens(fixture("plan-claims.yaml"))).toThrow(
      "unknown field plan (known: active, sub, client_id, username, scope, exp) (line 2)",
    );
  });

  it("treats an empty file as no tokens", () => {
    expect(loadStaticTokens(fixture("empty.yaml")).size).toBe(0);
  });
});

describe("loadStaticTokens rejects a bad file with a message naming the file and entry", () => {
  const cases: [file: string, message: string][] = [
    [
      "bad-scope-type.yaml",
      `"bad-…".scope: expected a space-separated string ("read write") or a list of scopes (line 5)`,
    ],
    ["bad-sha256-key.yaml", `"sha256:not-a-hash": expected sha256: followed by 64 hex digits (line 2)`],
    [
      "unknown-field.yaml",
      `"sha256:78f7fc718beeb5ea6623f42461af47af0c447df08e6eddc966cbb4b9cecf0d73": ` +
        "unknown field clientid (known: active, sub, client_id, username, scope, exp, plan) (line 2)",
    ],
    [
      "duplicate-token.yaml",
      `"sha256:9a20043b7732b8c951c9cabdd33340d2182f36fde5030640b3153cee094d47b0": ` +
        "the same token is listed twice (line 5)",
    ],
    ["duplicate-key.yaml", `"dup-…": the same token is listed twice (line 6)`],
    ["not-a-mapping.yaml", "(root): expected a mapping of token to fields"],
    ["plan-claim-not-a-string.yaml", `"pro-…".plan: expected a plan name (a string) (line 2)`],
  ];

  it.each(cases)("%s", (file, message) => {
    expect(() => loadStaticTokens(fixture(file), ["plan"])).toThrow(
      `invalid tokens file ${fixture(file)}:\n  ${message}`,
    );
  });

  it("never prints a plaintext token, only a short prefix", () => {
    expect(() => loadStaticTokens(fixture("bad-scope-type.yaml"))).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining("bad-scope-token") }),
    );
  });

  it("names a missing file", () => {
    expect(() => new StaticTokenSource("missing.yaml", fixtures)).toThrow(
      `cannot read tokens file ${fixture("missing.yaml")}: ENOENT`,
    );
  });
});

describe("loading the file just loaded", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "tokens-reload-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("parses it once while unchanged (a start or reload checks the file, then loads it), again once changed", () => {
    const file = path.join(dir, "tokens.yaml");
    copyFileSync(fixture("valid.yaml"), file);
    const first = loadStaticTokens(file);
    expect(loadStaticTokens(file)).toBe(first);
    expect(loadStaticTokens(file, ["plan"])).not.toBe(first);
    const withPlans = loadStaticTokens(file, ["plan"]);
    expect(loadStaticTokens(file, ["plan"])).toBe(withPlans);

    writeFileSync(file, "another-token: { sub: carol }\n");
    const changed = loadStaticTokens(file);
    expect(changed).not.toBe(withPlans);
    expect(changed.size).toBe(1);
    expect(loadStaticTokens(file)).toBe(changed);
  });
});
