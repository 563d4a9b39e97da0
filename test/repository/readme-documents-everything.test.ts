/**
 * The manual documents everything: README.md, `docs/*.md` and CHANGELOG.md
 * together document every configuration key of the schema (with the schema's default), every code
 * of the error catalogue (with its status and message) and every metric family. The lists are read
 * from the code at run time, so a new key, code or metric fails this test until the manual names
 * it, and a key removed from the schema fails it while the manual still documents it. Where each
 * is documented may change (the README was split into chapters by scripts/split-manual.py); that
 * it is documented may not. Links, contents tables and the README's length are checked in
 * manual-links-resolve.test.ts.
 */
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { keyEntries } from "../../gateway/config/key-paths.js";
import { gatewayConfigSchema } from "../../gateway/config/schema.js";
import { ERROR_CATALOG } from "../../gateway/base/error-catalog.js";
import { createMetrics } from "../../gateway/observability/metrics.js";
import { cells, manualFiles, tableRows } from "../helpers/manual.js";

const manual = manualFiles();

/** The configuration reference: tables headed `| Key | Default | ... | Meaning |`, wherever they are. */
const isKeyTable = (row: string): boolean => /^\| Key \| Default \|(.* \|)? Meaning \|$/.test(row.trim());

describe("configuration keys (gateway/config/schema.ts)", () => {
  const rows = new Map<string, string[]>();
  for (const line of tableRows(manual, isKeyTable)) {
    const key = /^\| `([^`]+)` \|/.exec(line)?.[1];
    if (key !== undefined) rows.set(key, cells(line));
  }
  const entries = keyEntries(gatewayConfigSchema);

  it("finds the reference table", () => {
    expect(rows.size).toBeGreaterThan(50);
  });

  it.each(entries.map((e) => [e.path, e] as const))("%s has a row, with the schema's default", (key, e) => {
    const row = rows.get(key);
    expect(row, `a "| Key | Default | Meaning |" row for \`${key}\` in the manual`).toBeDefined();
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

describe("error codes (gateway/base/error-catalog.ts)", () => {
  const rows = tableRows(manual, (r) => r.startsWith("| Code | Status | Message |"));

  it.each(Object.entries(ERROR_CATALOG))("%s has a row with its status and message", (code, entry) => {
    const row = rows.find((line) => line.startsWith(`| \`${code}\` |`));
    expect(row, `error catalogue row for ${code}`).toBeDefined();
    const [, status, message] = cells(row!);
    expect(status).toBe(String(entry.status));
    expect(message).toBe(entry.message);
  });

  it("are each named in the troubleshooting chapter, when there is one", () => {
    const guide = manual.find((f) => f.path === "docs/troubleshooting.md");
    if (guide === undefined) return;
    expect(Object.keys(ERROR_CATALOG).filter((code) => !guide.text.includes(`\`${code}\``))).toEqual([]);
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
  const rows = tableRows(manual, (r) => /^\| Metric \|/.test(r));

  it.each(names)("%s has a row", (name) => {
    expect(rows.some((line) => line.startsWith(`| \`${name}\` |`))).toBe(true);
  });
});
