/**
 * docs/architecture.md's Modules table and its drawing name modules of `gateway/`: every file or
 * folder they name exists (a name is resolved as the end of a path below `gateway/`, so
 * `core/pipeline.ts`, `raw-response.ts` and `balancing/` all count).
 */
import { readFileSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../helpers/manual.js";

/** Every file and folder below `dir`, as paths relative to it with `/` separators (folders end in `/`). */
function tree(dir: string, prefix = ""): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(`${prefix}${name}/`, ...tree(full, `${prefix}${name}/`));
    else out.push(`${prefix}${name}`);
  }
  return out;
}

const GATEWAY = tree(path.join(ROOT, "gateway"));
const ARCHITECTURE = readFileSync(path.join(ROOT, "docs/architecture.md"), "utf8");

/** The module names in `text`: backticked or bare words ending in `.ts`, `.lua` or `/`. */
function moduleNames(text: string): string[] {
  const names = new Set<string>();
  for (const m of text.matchAll(/(?<![\w./-])([a-z0-9][\w./-]*(?:\.ts|\.lua|\/))(?![\w/])/g)) {
    const name = m[1]!;
    if (name.startsWith("http") || name.startsWith("test/") || name.startsWith("config/")) continue;
    names.add(name.replace(/^gateway\//, ""));
  }
  return [...names];
}

function exists(name: string): boolean {
  return GATEWAY.some((p) => p === name || p.endsWith(`/${name}`));
}

describe("docs/architecture.md", () => {
  const table = ARCHITECTURE.slice(ARCHITECTURE.indexOf("## Modules"), ARCHITECTURE.indexOf("## Where"));
  const drawing = ARCHITECTURE.slice(0, ARCHITECTURE.indexOf("## Modules"));

  it("names modules in its Modules table", () => {
    expect(moduleNames(table).length).toBeGreaterThan(40);
  });

  it.each([
    ["the Modules table", table],
    ["the drawings", drawing],
  ])("names only modules that exist in %s", (_where, text) => {
    expect(moduleNames(text).filter((n) => !exists(n))).toEqual([]);
  });
});
