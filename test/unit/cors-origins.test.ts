/**
 * SPEC §14 origin matching: exact origins, `*` in a host standing for one or more DNS labels with
 * scheme and port exact, and `*` alone; never a suffix trick or another scheme.
 */
import { describe, expect, it } from "vitest";
import { corsSchema } from "../../gateway/config/cors-schema.js";
import { CorsPolicy } from "../../gateway/cors/cors-policy.js";

const policy = (allowed_origins: string[], allow_credentials = false) =>
  new CorsPolicy(corsSchema.parse({ allowed_origins, allow_credentials }), false);

describe("CorsPolicy.allowOrigin", () => {
  const p = policy(["https://app.example.com", "https://*.example.com", "http://localhost:5173"]);

  it.each([
    ["https://app.example.com", "https://app.example.com"],
    ["https://a.example.com", "https://a.example.com"],
    ["https://a.b.example.com", "https://a.b.example.com"],
    ["HTTPS://A.Example.com", "HTTPS://A.Example.com"],
    ["http://localhost:5173", "http://localhost:5173"],
  ])("allows %s", (origin, expected) => {
    expect(p.allowOrigin(origin)).toBe(expected);
  });

  it.each([
    "https://example.com",
    "https://evil-example.com",
    "https://example.com.evil.net",
    "https://a.example.com.evil.net",
    "http://a.example.com",
    "https://a.example.com:8443",
    "https://.example.com",
    "https://a..example.com",
    "http://localhost:5174",
    "http://localhost",
    "null",
  ])("refuses %s", (origin) => {
    expect(p.allowOrigin(origin)).toBeNull();
  });

  it("answers * for allowed_origins [*] without credentials, the origin itself with them", () => {
    expect(policy(["*"]).allowOrigin("https://x.test")).toBe("*");
    expect(policy(["*"], true).allowOrigin("https://x.test")).toBe("https://x.test");
  });

  it("rejects an origin that is not one at configuration time", () => {
    for (const bad of ["example.com", "https://app.example.com/", "https://a.*.example.com"]) {
      const r = corsSchema.safeParse({ allowed_origins: [bad] });
      expect(r.success, bad).toBe(false);
      expect(r.error?.issues[0]?.message).toBe(
        'expected "*" or an origin like https://app.example.com or https://*.example.com',
      );
    }
  });
});
