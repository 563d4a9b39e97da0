/**
 * `config/gateway.example.yaml` names every key of the configuration schema: with every `# key:`
 * line uncommented (the alternatives and optional blocks it shows commented out), its key paths
 * cover the schema's (`keyEntries`, the walker the manual's tests use too), and each value shown
 * for a key with a default is that default. The file as it is passes validation (config-errors).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseDocument } from "yaml";
import { keyEntries } from "../../gateway/config/key-paths.js";
import { gatewayConfigSchema } from "../../gateway/config/schema.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const text = readFileSync(path.join(ROOT, "config/gateway.example.yaml"), "utf8");
/** Every line that is a commented-out key (`# key:` or `# - `) uncommented in place. */
const uncommented = text
  .split("\n")
  .map((l) => l.replace(/^(\s*)# (\s*(?:- )?[a-z_][a-z0-9_]*:(?:\s|$))/, "$1$2"))
  .join("\n");
const entries = keyEntries(gatewayConfigSchema);
const schemaPaths = new Set(entries.map((e) => e.path));

/** The document's key paths, spelt as `keyEntries` spells them (`<name>` for names, `[]` for lists). */
function pathsOf(value: unknown, prefix: string, out: Map<string, unknown[]>): void {
  if (Array.isArray(value)) {
    for (const item of value) pathsOf(item, `${prefix}[]`, out);
    return;
  }
  if (value === null || typeof value !== "object") return;
  for (const [key, v] of Object.entries(value)) {
    const literal = prefix === "" ? key : `${prefix}.${key}`;
    const named = `${prefix}.<name>`;
    const known = (p: string) =>
      [...schemaPaths].some((s) => s === p || s.startsWith(`${p}.`) || s.startsWith(`${p}[]`));
    const at = known(literal) ? literal : known(named) ? named : literal;
    if (schemaPaths.has(at)) out.set(at, [...(out.get(at) ?? []), v]);
    pathsOf(v, at, out);
  }
}

describe("config/gateway.example.yaml", () => {
  const doc = parseDocument(uncommented, { uniqueKeys: false });
  const found = new Map<string, unknown[]>();
  pathsOf(doc.toJS(), "", found);

  it("parses with every commented-out key uncommented", () => {
    expect(doc.errors.map((e) => e.message)).toEqual([]);
  });

  it.each([...schemaPaths].map((p) => [p]))("names %s", (key) => {
    expect(found.has(key), `${key} in config/gateway.example.yaml`).toBe(true);
  });

  it("shows each default as the schema has it: as a value, or in a comment (`default X`)", () => {
    const shown = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));
    const wrong = entries
      .filter((e) => e.default !== undefined && !e.path.includes("[]"))
      .filter((e) => {
        const values = (found.get(e.path) ?? []).map((v) => JSON.stringify(v));
        return (
          !values.includes(JSON.stringify(e.default!.value)) &&
          !text.includes(`default ${shown(e.default!.value)}`)
        );
      })
      .map(
        (e) => `${e.path}: ${JSON.stringify(found.get(e.path))}, default ${JSON.stringify(e.default!.value)}`,
      );
    expect(wrong).toEqual([]);
  });
});
