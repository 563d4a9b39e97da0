/**
 * The README is the whole user's manual: it documents every configuration key of the
 * schema (with the schema's default), every code of the error catalogue (with its status and
 * message) and every metric family, and it links to nothing outside the repository. The lists are
 * read from the code at run time, so a new key, code or metric fails this test until the README
 * names it, and a key removed from the schema fails it while the README still documents it.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { keyEntries } from "../../gateway/config/key-paths.js";
import { gatewayConfigSchema } from "../../gateway/config/schema.js";
import { ERROR_CATALOG } from "../../gateway/base/error-catalog.js";
import { createMetrics } from "../../gateway/observability/metrics.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
const lines = readme.split("\n");

/** The lines of the section under `heading` (up to the next heading of the same or a higher level). */
function section(heading: string): string[] {
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`README has no "${heading}"`);
  const level = /^#+/.exec(heading)![0].length;
  const end = lines.findIndex((l, i) => i > start && /^#+ /.test(l) && /^#+/.exec(l)![0].length <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** Table rows of `rows` as trimmed cells (the leading and trailing pipes dropped). */
function cells(row: string): string[] {
  return row
    .split("|")
    .slice(1, -1)
    .map((c) => c.trim());
}

describe("configuration keys (gateway/config/schema.ts)", () => {
  const rows = new Map<string, string[]>();
  for (const line of section("## Configuration")) {
    const key = /^\| `([^`]+)` \|/.exec(line)?.[1];
    if (key !== undefined) rows.set(key, cells(line));
  }
  const entries = keyEntries(gatewayConfigSchema);

  it.each(entries.map((e) => [e.path, e] as const))("%s has a row, with the schema's default", (key, e) => {
    const row = rows.get(key);
    expect(row, `README "## Configuration" row for \`${key}\``).toBeDefined();
    if (e.default !== undefined) {
      const v = e.default.value;
      const shown = typeof v === "string" ? v : JSON.stringify(v);
      expect(row![1]).toContain(`\`${shown}\``);
    }
  });

  it("documents no key the schema does not have", () => {
    const known = new Set(entries.map((e) => e.path));
    expect([...rows.keys()].filter((k) => !known.has(k))).toEqual([]);
  });
});

describe("error codes (gateway/errors.ts)", () => {
  it.each(Object.entries(ERROR_CATALOG))("%s has a row with its status and message", (code, entry) => {
    const row = section("## Error catalogue").find((line) => line.startsWith(`| \`${code}\` |`));
    expect(row, `README row for ${code}`).toBeDefined();
    const [, status, message] = cells(row!);
    expect(status).toBe(String(entry.status));
    expect(message).toBe(entry.message);
  });
});

describe("metrics (gateway/observability/metrics.ts)", () => {
  const registry = new Registry();
  createMetrics(registry, "test");
  // prom-client's default process metrics are described as a group, not row by row.
  const names = registry
    .getMetricsAsArray()
    .map((m) => m.name)
    .filter((n) => n.startsWith("gateway_"));

  it.each(names)("%s has a row", (name) => {
    expect(section("### Metrics").some((line) => line.startsWith(`| \`${name}\` |`))).toBe(true);
  });
});

describe("links", () => {
  /**
   * The README's prose: fenced code blocks and inline code removed, so an example URL in a curl
   * line or a config snippet is no link (GitHub does not render one there either).
   */
  const prose = readme.replace(/^ *```[^\n]*\n[\s\S]*?^ *```$/gm, "").replace(/`[^`\n]*`/g, "");
  /**
   * Every link target GitHub would render: inline links and images `[text](target "title")`,
   * reference definitions `[ref]: target`, autolinks `<scheme:...>` and bare `http(s)://` URLs.
   */
  const targets = [
    ...[...prose.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
    ...[...prose.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]!),
    ...[...prose.matchAll(/<([a-z][a-z0-9+.-]*:[^>\s]*)>/gi)].map((m) => m[1]!),
    ...[...prose.matchAll(/(?<![(<\w])(https?:\/\/[^\s)>\]]+)/gi)].map((m) => m[1]!),
  ];

  /**
   * GitHub's heading anchors of a Markdown text: lower case, punctuation other than `-` and `_`
   * dropped, spaces to `-`; a repeated heading gets `-1`, `-2`, ...
   */
  function anchorsOf(text: string): Set<string> {
    const seen = new Map<string, number>();
    const out = new Set<string>();
    const body = text.replace(/^ *```[^\n]*\n[\s\S]*?^ *```$/gm, "");
    for (const l of body.split("\n").filter((l) => /^#{1,6} /.test(l))) {
      const slug = l
        .replace(/^#+ /, "")
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, "")
        .replace(/ /g, "-");
      const n = seen.get(slug) ?? 0;
      seen.set(slug, n + 1);
      out.add(n === 0 ? slug : `${slug}-${n}`);
    }
    return out;
  }

  it("finds the README's links, and no empty one", () => {
    expect(targets.length).toBeGreaterThan(10);
    expect(targets.filter((t) => t === "")).toEqual([]);
  });

  it("never leave the repository (no scheme, no absolute path; examples belong in code)", () => {
    expect(
      targets.filter((t) => /^[a-z][a-z0-9+.-]*:/i.test(t) || t.startsWith("/") || t.startsWith("//")),
    ).toEqual([]);
  });

  it("point at files of the repository that exist", () => {
    const missing = targets.filter((t) => {
      if (t.startsWith("#") || /^[a-z][a-z0-9+.-]*:/i.test(t)) return false;
      const file = path.resolve(ROOT, decodeURIComponent(t.split("#")[0]!));
      return !file.startsWith(ROOT) || !existsSync(file);
    });
    expect(missing).toEqual([]);
  });

  it("to a heading, here or in another Markdown file, name one that exists", () => {
    const own = anchorsOf(readme);
    const broken = targets.filter((t) => {
      const hash = t.indexOf("#");
      if (hash < 0 || /^[a-z][a-z0-9+.-]*:/i.test(t)) return false;
      const file = t.slice(0, hash);
      if (file !== "" && !file.endsWith(".md")) return false;
      const anchors = file === "" ? own : anchorsOf(readFileSync(path.resolve(ROOT, file), "utf8"));
      return !anchors.has(decodeURIComponent(t.slice(hash + 1)));
    });
    expect(broken).toEqual([]);
  });
});

describe("table of contents", () => {
  it("lists every top-level section, in order, linking to it", () => {
    const body = readme.replace(/^ *```[^\n]*\n[\s\S]*?^ *```$/gm, "");
    const headings = body
      .split("\n")
      .filter((l) => /^## /.test(l) && l !== "## Contents")
      .map((l) => l.slice(3));
    const listed = section("## Contents")
      .map((l) => /^- \[(.+)\]\(#[^)]+\)$/.exec(l)?.[1])
      .filter((h) => h !== undefined);
    expect(listed).toEqual(headings);
  });
});
