/**
 * Every gateway error body is the SPEC's JSON, from the catalog. That the README documents each
 * code is checked in readme-documents-everything.test.ts.
 */
import { describe, expect, it } from "vitest";
import { ERROR_CATALOG, errorBody, type ErrorCode } from "../../gateway/base/error-catalog.js";

describe("error catalog", () => {
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
