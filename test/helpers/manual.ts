/**
 * The user's manual as the repository holds it (issue 40): README.md, every `docs/*.md` and
 * CHANGELOG.md, each with its path from the repository's root, plus the Markdown rules the manual's
 * tests share (GitHub's heading anchors, links outside code, tables). Before the split the manual
 * is README.md alone, and every helper here works on that too.
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The repository's root directory (absolute, ending in a separator). */
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** One file of the manual: its path from the root (`docs/x.md`) and its text. */
export interface ManualFile {
  readonly path: string;
  readonly text: string;
}

/** README.md, then `docs/*.md` in name order, then CHANGELOG.md when it exists. */
export function manualFiles(): ManualFile[] {
  const docs = existsSync(path.join(ROOT, "docs"))
    ? readdirSync(path.join(ROOT, "docs"))
        .filter((n) => n.endsWith(".md"))
        .sort()
        .map((n) => `docs/${n}`)
    : [];
  const changelog = existsSync(path.join(ROOT, "CHANGELOG.md")) ? ["CHANGELOG.md"] : [];
  return ["README.md", ...docs, ...changelog].map((p) => ({
    path: p,
    text: readFileSync(path.join(ROOT, p), "utf8"),
  }));
}

/** The text without fenced code blocks (their lines dropped), as GitHub renders no heading there. */
export function withoutCode(text: string): string {
  return text.replace(/^ *(`{3,}|~{3,})[^\n]*\n[\s\S]*?^ *\1 *$/gm, "");
}

/** One heading of a Markdown text: its level, its text and its GitHub anchor. */
export interface Heading {
  readonly level: number;
  readonly title: string;
  readonly anchor: string;
}

/**
 * The headings of a Markdown text outside fenced code, in order, with GitHub's anchors: lower case,
 * punctuation other than `-` and `_` dropped, spaces to `-`; a repeated heading gets `-1`, `-2`, ...
 */
export function headingsOf(text: string): Heading[] {
  const seen = new Map<string, number>();
  const out: Heading[] = [];
  for (const l of withoutCode(text).split("\n")) {
    const m = /^(#{1,6}) (.*)$/.exec(l);
    if (!m) continue;
    const title = m[2]!.trim();
    const slug = title
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.push({ level: m[1]!.length, title, anchor: n === 0 ? slug : `${slug}-${n}` });
  }
  return out;
}

/** The anchors of a Markdown text's headings. */
export function anchorsOf(text: string): Set<string> {
  return new Set(headingsOf(text).map((h) => h.anchor));
}

/**
 * The lines of the section under the heading whose text is `title` (up to the next heading of the
 * same or a higher level), or undefined when the text has no such heading.
 */
export function sectionOf(text: string, title: string): string[] | undefined {
  const lines = withoutCode(text).split("\n");
  const start = lines.findIndex((l) => /^#{1,6} /.test(l) && l.replace(/^#+ /, "").trim() === title);
  if (start < 0) return undefined;
  const level = /^#+/.exec(lines[start]!)![0].length;
  const end = lines.findIndex((l, i) => i > start && /^#{1,6} /.test(l) && /^#+/.exec(l)![0].length <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/**
 * The anchor of the heading a table belongs to (the last heading before its header row), in the
 * first file holding a table whose header row satisfies `header`.
 */
export function tableHome(
  files: readonly ManualFile[],
  header: (row: string) => boolean,
): { path: string; anchor: string } | undefined {
  for (const f of files) {
    const lines = withoutCode(f.text).split("\n");
    const at = lines.findIndex(header);
    if (at < 0) continue;
    const before = headingsOf(lines.slice(0, at).join("\n"));
    return { path: f.path, anchor: before.at(-1)?.anchor ?? "" };
  }
  return undefined;
}

/**
 * Every link target GitHub would render in a text, outside fenced code and inline code: inline
 * links and images `[text](target "title")`, reference definitions `[ref]: target`, autolinks
 * `<scheme:...>` and bare `http(s)://` URLs.
 */
export function linkTargets(text: string): string[] {
  const prose = withoutCode(text).replace(/`[^`\n]*`/g, "");
  return [
    ...[...prose.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
    ...[...prose.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]!),
    ...[...prose.matchAll(/<([a-z][a-z0-9+.-]*:[^>\s]*)>/gi)].map((m) => m[1]!),
    ...[...prose.matchAll(/(?<![(<\w])(https?:\/\/[^\s)>\]]+)/gi)].map((m) => m[1]!),
  ];
}

/** A table row's cells, trimmed (the leading and trailing pipes dropped). */
export function cells(row: string): string[] {
  return row
    .split("|")
    .slice(1, -1)
    .map((c) => c.trim());
}

/**
 * The body rows of every table, in every file given, whose header row satisfies `header` (the
 * header row and its `| --- |` line skipped).
 */
export function tableRows(files: readonly ManualFile[], header: (row: string) => boolean): string[] {
  const rows: string[] = [];
  for (const f of files) {
    let inTable = false;
    for (const line of withoutCode(f.text).split("\n")) {
      if (!line.startsWith("|")) inTable = false;
      else if (inTable) {
        if (!/^\|[\s|:-]+\|$/.test(line)) rows.push(line);
      } else if (header(line)) inTable = true;
    }
  }
  return rows;
}
