/**
 * The pure parts of JWT handling (SPEC §11): which tokens are JWS-shaped (and so never reach
 * introspection), and how RFC 9068 §2.2 claims become the token information the pipeline uses.
 */
import { describe, expect, it } from "vitest";
import { isJwsCompact } from "../../gateway/auth/jws-shape.js";
import { tokenInfoOf } from "../../gateway/auth/jwt-validator.js";

const b64 = (s: string) => Buffer.from(s).toString("base64url");

describe("isJwsCompact (RFC 7515 §7.1)", () => {
  it.each([
    ["a signed JWT", `${b64('{"alg":"ES256","kid":"k"}')}.${b64('{"sub":"a"}')}.c2ln`],
    ["alg none with an empty signature", `${b64('{"alg":"none"}')}.${b64("{}")}.`],
    ["a detached payload", `${b64('{"alg":"RS256"}')}..c2ln`],
    ["a header with whitespace", `${b64(' { "alg" : "RS256" } ')}.e30.c2ln`],
  ])("claims %s", (_what, token) => {
    expect(isJwsCompact(token)).toBe(true);
  });

  it.each([
    ["an opaque token", "rVwQFlLCWLyhnIbNf8Kfamam054Da8bB2HOsMYoUMpG"],
    ["two segments", `${b64('{"alg":"RS256"}')}.e30`],
    ["four segments", `${b64('{"alg":"RS256"}')}.e30.c2ln.c2ln`],
    ["an empty header", ".e30.c2ln"],
    ["a header that is not JSON", `${b64("alg")}.e30.c2ln`],
    ["a header that is a JSON array", `${b64('[{"alg":"RS256"}]')}.e30.c2ln`],
    ["a header that is broken JSON", `${b64('{"alg":')}.e30.c2ln`],
    ["padding", `${b64('{"alg":"RS256"}')}=.e30.c2ln`],
    ["a JWE (five segments)", `${b64('{"alg":"RSA-OAEP","enc":"A256GCM"}')}.a.b.c.d`],
  ])("leaves %s to introspection", (_what, token) => {
    expect(isJwsCompact(token)).toBe(false);
  });
});

describe("tokenInfoOf (RFC 9068 §2.2)", () => {
  it("maps sub, client_id, a scope string, exp, and keeps the claims the configuration reads", () => {
    expect(
      tokenInfoOf(
        {
          sub: "u1",
          client_id: "app",
          scope: "read  write",
          exp: 10,
          iss: "i",
          plan: "pro",
          team: "blue",
          n: 3,
        },
        ["plan"],
      ),
    ).toEqual({
      active: true,
      sub: "u1",
      clientId: "app",
      scope: ["read", "write"],
      exp: 10,
      claims: { plan: "pro" },
    });
  });

  it("keeps no claims object when the configuration reads none, or the token has none of them", () => {
    expect(tokenInfoOf({ sub: "u1", iss: "i", plan: "pro", exp: 10 })).not.toHaveProperty("claims");
    expect(tokenInfoOf({ sub: "u1", iss: "i", exp: 10 }, ["plan"])).not.toHaveProperty("claims");
  });

  it("takes an scp array when there is no scope string", () => {
    expect(tokenInfoOf({ scp: ["read", "admin"], exp: 10 })?.scope).toEqual(["read", "admin"]);
    expect(tokenInfoOf({ exp: 10 })?.scope).toEqual([]);
  });

  it.each([
    ["sub", { sub: 1, exp: 10 }],
    ["client_id", { client_id: ["a"], exp: 10 }],
    ["scope", { scope: ["read"], exp: 10 }],
    ["scp", { scp: "read", exp: 10 }],
    ["scp members", { scp: ["read", 2], exp: 10 }],
    ["exp", { sub: "u" }],
  ])("refuses a claims set whose %s has the wrong type", (_what, payload) => {
    expect(tokenInfoOf(payload as never)).toBeUndefined();
  });
});
