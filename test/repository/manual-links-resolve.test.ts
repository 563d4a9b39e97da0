/**
 * The manual can be read in an hour and navigated in two clicks (issue 40): README.md is at most
 * 600 lines; every link of README.md, `docs/*.md` and CHANGELOG.md stays in the repository and
 * names a file that exists and, with `#anchor`, a heading that exists there (GitHub's anchor rule);
 * the README's contents lists its own sections and links to every chapter in `docs/`; each chapter
 * opens with a contents table of its sections; and the configuration keys, the error codes and the
 * metrics are each at most two clicks from the README's contents.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  ROOT,
  anchorsOf,
  headingsOf,
  linkTargets,
  manualFiles,
  sectionOf,
  tableHome,
  withoutCode,
  type ManualFile,
} from "../helpers/manual.js";

const manual = manualFiles();
const readme = manual.find((f) => f.path === "README.md")!;
const chapters = manual.filter((f) => f.path.startsWith("docs/"));
const hasScheme = (t: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(t);

/** A link target of `from` as a path from the root and an anchor ("" for none). */
function resolve(from: string, target: string): { file: string; anchor: string } {
  const hash = target.indexOf("#");
  const file = hash < 0 ? target : target.slice(0, hash);
  const anchor = hash < 0 ? "" : decodeURIComponent(target.slice(hash + 1));
  if (file === "") return { file: from, anchor };
  const abs = path.resolve(ROOT, path.dirname(from), decodeURIComponent(file));
  return { file: path.relative(ROOT, abs).split(path.sep).join("/"), anchor };
}

/**
 * The link targets of a file's `## Contents` section, resolved: in the README the whole section, in
 * a chapter its first list (the chapter's own text may follow without a heading).
 */
function contentsLinks(f: ManualFile): { file: string; anchor: string }[] {
  let lines = sectionOf(f.text, "Contents") ?? [];
  if (f.path !== "README.md") {
    const end = lines.findIndex((l) => l.trim() !== "" && !/^\s*- /.test(l));
    lines = end < 0 ? lines : lines.slice(0, end);
  }
  return linkTargets(lines.join("\n")).map((t) => resolve(f.path, t));
}

describe("the README", () => {
  it("is at most 600 lines", () => {
    expect(readme.text.split("\n").length).toBeLessThanOrEqual(600);
  });

  it("keeps the two commands of the quick start as written", () => {
    const quickStart = readme.text.slice(readme.text.indexOf("## Quick start"));
    expect(quickStart).toContain("\nnpm ci && npm run demo ");
    expect(quickStart).toContain("\nnpm ci && npm test ");
  });

  it("lists every top-level section in its contents, in order, linking to it", () => {
    const headings = headingsOf(readme.text)
      .filter((h) => h.level === 2 && h.title !== "Contents")
      .map((h) => h.title);
    const listed = (sectionOf(readme.text, "Contents") ?? [])
      .map((l) => /^- \[(.+)\]\(#[^)]+\)$/.exec(l)?.[1])
      .filter((h) => h !== undefined);
    expect(listed).toEqual(headings);
  });

  it("links from its contents to every chapter in docs/ and to the changelog", () => {
    const linked = new Set(contentsLinks(readme).map((l) => l.file));
    const files = manual.map((f) => f.path).filter((p) => p !== "README.md");
    expect(files.filter((p) => !linked.has(p))).toEqual([]);
  });
});

describe("each chapter in docs/", () => {
  it("exists (the manual is split into chapters)", () => {
    expect(chapters.length).toBeGreaterThan(5);
  });

  it.each(chapters.map((f) => [f.path, f] as const))(
    "%s has one title and a contents table of its sections, in order",
    (_, f) => {
      const headings = headingsOf(f.text);
      expect(headings.filter((h) => h.level === 1)).toHaveLength(1);
      expect(headings[0]!.level).toBe(1);
      const sections = headings.filter((h) => h.level === 2 && h.title !== "Contents").map((h) => h.anchor);
      const listed = contentsLinks(f)
        .filter((l) => l.file === f.path && l.anchor !== "")
        .map((l) => l.anchor);
      expect(listed.filter((a) => sections.includes(a))).toEqual(sections);
      expect(contentsLinks(f).some((l) => l.file === "README.md")).toBe(true);
    },
  );
});

describe("links in README.md, docs/*.md and CHANGELOG.md", () => {
  const links = manual.flatMap((f) => linkTargets(f.text).map((target) => ({ from: f.path, target })));

  it("are found, and none is empty", () => {
    expect(links.length).toBeGreaterThan(100);
    expect(links.filter((l) => l.target === "")).toEqual([]);
  });

  it("never leave the repository (no scheme, no absolute path; examples belong in code)", () => {
    expect(
      links.filter((l) => hasScheme(l.target) || l.target.startsWith("/") || l.target.startsWith("//")),
    ).toEqual([]);
  });

  it("point at files of the repository that exist", () => {
    const missing = links.filter((l) => {
      if (hasScheme(l.target)) return false;
      const { file } = resolve(l.from, l.target);
      return file.startsWith("..") || !existsSync(path.join(ROOT, file));
    });
    expect(missing).toEqual([]);
  });

  it("to a heading, in the same or another Markdown file, name one that exists", () => {
    const anchors = new Map<string, Set<string>>();
    const anchorsIn = (file: string): Set<string> => {
      if (!anchors.has(file)) anchors.set(file, anchorsOf(readFileSync(path.join(ROOT, file), "utf8")));
      return anchors.get(file)!;
    };
    const broken = links.filter((l) => {
      if (hasScheme(l.target) || !l.target.includes("#")) return false;
      const { file, anchor } = resolve(l.from, l.target);
      if (!file.endsWith(".md") || !existsSync(path.join(ROOT, file))) return false;
      return !anchorsIn(file).has(anchor);
    });
    expect(broken).toEqual([]);
  });
});

describe("two clicks from the README's contents", () => {
  const first = contentsLinks(readme);
  /** Whether a heading is linked from the README's contents, or from the contents of a chapter it links. */
  const reachable = (file: string, anchor: string): boolean =>
    first.some((l) => l.file === file && l.anchor === anchor) ||
    (first.some((l) => l.file === file) &&
      contentsLinks(manual.find((f) => f.path === file)!).some(
        (l) => l.file === file && l.anchor === anchor,
      ));

  it.each([
    ["every configuration key", (r: string) => /^\| Key \| Default \|(.* \|)? Meaning \|$/.test(r.trim())],
    ["every error code", (r: string) => r.startsWith("| Code | Status | Message |")],
    ["every metric", (r: string) => r.startsWith("| Metric |")],
  ] as const)("%s", (_, header) => {
    const home = tableHome(manual, header);
    expect(home).toBeDefined();
    expect(reachable(home!.path, home!.anchor), `${home!.path}#${home!.anchor}`).toBe(true);
  });

  it("the glossary and the troubleshooting guide, linked from the README's prose too", () => {
    const prose = withoutCode(readme.text);
    expect(prose).toContain("](docs/glossary.md)");
    expect(prose).toContain("](docs/troubleshooting.md)");
  });
});
