import { describe, expect, it } from "vitest";
import { newRequestId } from "../../gateway/transport/request-id.js";

describe("newRequestId", () => {
  it("makes version 4 UUIDs (RFC 9562), as crypto.randomUUID does", () => {
    for (let i = 0; i < 2000; i++)
      expect(newRequestId()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("never repeats across refills of its random pool", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) seen.add(newRequestId());
    expect(seen.size).toBe(5000);
  });

  it("returns independent strings (the buffer it writes into is reused)", () => {
    const a = newRequestId();
    const copy = `${a}`;
    newRequestId();
    expect(a).toBe(copy);
  });
});
