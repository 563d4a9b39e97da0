/** Every gateway error is in the catalog and documented in the README's error catalogue. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ERROR_CATALOG, errorBody, type ErrorCode } from "../../gateway/errors.js";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");

describe("error catalog", () => {
  it.each(Object.entries(ERROR_CATALOG))("README documents %s with its status and message", (code, entry) => {
    const row = readme.split("\n").find((line) => line.startsWith(`| \`${code}\` |`));
    expect(row, `README row for ${code}`).toBeDefined();
    const cells = row!.split("|").map((c) => c.trim());
    expect(cells[2]).toBe(String(entry.status));
    expect(cells[3]).toBe(entry.message);
  });

  it("bodies are the SPEC's JSON with code equal to the status", () => {
    for (const [code, entry] of Object.entries(ERROR_CATALOG) as [
      ErrorCode,
      (typeof ERROR_CATALOG)[ErrorCode],
    ][]) {
      const body = JSON.parse(errorBody(code, 7)) as { error: { code: number; message: string } };
      expect(body.error.code).toBe(entry.status);
      expect(body.error.message).toBe(entry.message.replace("N seconds", "7 seconds"));
    }
  });
});
