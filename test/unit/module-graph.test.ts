/**
 * House rules a script can check (issue 11 §9): no import cycle among the gateway's modules, type
 * imports included (a cycle of types still ties two modules' designs together), and no source file
 * over 300 lines.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../gateway/", import.meta.url));
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+"(\.{1,2}\/[^"]+)\.js"/g;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(path.join(dir, e.name))
      : e.name.endsWith(".ts")
        ? [path.join(dir, e.name)]
        : [],
  );
}

const files = sources(ROOT);
const graph = new Map<string, string[]>(
  files.map((f) => [
    f,
    [...readFileSync(f, "utf8").matchAll(IMPORT)].map((m) => path.resolve(path.dirname(f), `${m[1]!}.ts`)),
  ]),
);

/** Every cycle's modules, found by depth-first search (each reported once, from its first module). */
function cycles(): string[][] {
  const found: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (f: string): void => {
    state.set(f, "open");
    stack.push(f);
    for (const dep of graph.get(f) ?? []) {
      if (state.get(dep) === "open")
        found.push(stack.slice(stack.indexOf(dep)).map((x) => path.relative(ROOT, x)));
      else if (!state.has(dep)) visit(dep);
    }
    stack.pop();
    state.set(f, "done");
  };
  for (const f of files) if (!state.has(f)) visit(f);
  return found;
}

describe("the gateway's module graph", () => {
  it("reads every module and resolves its relative imports", () => {
    expect(files.length).toBeGreaterThan(40);
    for (const [f, deps] of graph) for (const d of deps) expect(files, `${f} imports ${d}`).toContain(d);
  });

  it("has no import cycle", () => {
    expect(cycles()).toEqual([]);
  });

  it("has no source file over 300 lines", () => {
    const long = files.filter((f) => readFileSync(f, "utf8").split("\n").length > 301);
    expect(long.map((f) => path.relative(ROOT, f))).toEqual([]);
  });
});
