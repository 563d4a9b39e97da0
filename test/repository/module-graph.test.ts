/**
 * House rules a script can check: the layering of the README's Architecture
 * section, a core that imports no wire module (`node:http`, `node:net`, ...), no import cycle among
 * the gateway's modules, type imports included (a cycle of types still ties two modules' designs
 * together), and no source file over 300 lines.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../gateway", import.meta.url));
const IMPORT = /(?:(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+|\bimport\(\s*)"(\.{1,2}\/[^"]+)\.js"/g;

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

/**
 * The layers, top to bottom (README "Architecture"): entry (main, cli, demo → cluster → server) →
 * transport → core → steps (routing, cors, auth, ratelimit, proxy: none imports another) →
 * observability → base (config → base). A module imports only modules of its own folder or of a
 * lower rank; the steps share a rank, so a step that needs another's word finds it lower down.
 */
const RANK: Readonly<Record<string, number>> = {
  "main.ts": 9,
  cli: 8,
  demo: 8,
  cluster: 7,
  server: 6,
  transport: 5,
  core: 4,
  routing: 3,
  cors: 3,
  auth: 3,
  ratelimit: 3,
  proxy: 3,
  observability: 2,
  config: 1,
  base: 0,
};

/** The top-level folder (or root file) a module belongs to. */
const folderOf = (f: string): string => path.relative(ROOT, f).split(path.sep)[0]!;

/** Imports that cross folders, as `from-folder -> to-folder: file -> file`. */
function crossings(): { from: string; to: string; edge: string }[] {
  const out: { from: string; to: string; edge: string }[] = [];
  for (const [f, deps] of graph) {
    for (const d of deps) {
      const from = folderOf(f);
      const to = folderOf(d);
      if (from !== to) out.push({ from, to, edge: `${path.relative(ROOT, f)} -> ${path.relative(ROOT, d)}` });
    }
  }
  return out;
}

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

  it("places every top-level folder and root file in a layer", () => {
    const top = [...new Set(files.map(folderOf))].sort();
    expect(top.filter((t) => RANK[t] === undefined)).toEqual([]);
    expect(Object.keys(RANK).sort()).toEqual(top);
  });

  it("imports only downward, across layers (README: Architecture)", () => {
    const upward = crossings().filter(({ from, to }) => !(RANK[from]! > RANK[to]!));
    expect(upward.map((c) => c.edge)).toEqual([]);
  });

  it("has no pair of folders that import each other", () => {
    const pairs = new Set(crossings().map(({ from, to }) => `${from}>${to}`));
    const both = [...pairs].filter((p) => pairs.has(p.split(">").reverse().join(">")));
    expect(both).toEqual([]);
  });

  it("keeps node:http and node:net out of the core: it writes no byte, the transports do", () => {
    const NODE_IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+"(node:[a-z0-9/]+)"/g;
    const wire = new Set(["node:http", "node:https", "node:http2", "node:net", "node:tls"]);
    const found = files
      .filter((f) => folderOf(f) === "core")
      .flatMap((f) =>
        [...readFileSync(f, "utf8").matchAll(NODE_IMPORT)]
          .filter((m) => wire.has(m[1]!))
          .map((m) => `${path.relative(ROOT, f)} -> ${m[1]!}`),
      );
    expect(found).toEqual([]);
  });

  it("has no import cycle", () => {
    expect(cycles()).toEqual([]);
  });

  it("gives no two source files the same name (each name says one thing)", () => {
    const byName = new Map<string, string[]>();
    for (const f of files) byName.set(path.basename(f), [...(byName.get(path.basename(f)) ?? []), f]);
    const twins = [...byName.values()]
      .filter((fs) => fs.length > 1)
      .map((fs) => fs.map((f) => path.relative(ROOT, f)));
    expect(twins).toEqual([]);
  });

  it("has no source file over 300 lines", () => {
    const long = files.filter((f) => readFileSync(f, "utf8").split("\n").length > 301);
    expect(long.map((f) => path.relative(ROOT, f))).toEqual([]);
  });
});
