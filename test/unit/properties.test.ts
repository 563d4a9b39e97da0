/**
 * Property-based tests (fast-check) of the three parsers that stand between a hostile request and
 * a routing decision: the RFC 6750 bearer parser, the RFC 3986 path normaliser and the limit-class
 * path matcher. Each property is stated against a small model, not against the implementation.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_TOKEN_LENGTH, parseBearer } from "../../gateway/auth/bearer.js";
import { normalizeTarget, removeDotSegments } from "../../gateway/routing/normalize.js";
import { compilePathPattern, coversPrefix } from "../../gateway/routing/patterns.js";

// ---------------------------------------------------------------------------------------------
// RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token

const B64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/";
const b64char = fc.constantFrom(...B64_ALPHABET);
/** b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
const b64token = (maxBody = 200) =>
  fc
    .tuple(fc.string({ unit: b64char, minLength: 1, maxLength: maxBody }), fc.nat({ max: 3 }))
    .map(([body, pad]) => body + "=".repeat(pad));
/** "Bearer" in any mix of upper and lower case. */
const anyCaseScheme = fc
  .array(fc.boolean(), { minLength: 6, maxLength: 6 })
  .map((upper) => [..."bearer"].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join(""));
const spaces = fc.integer({ min: 1, max: 8 }).map((n) => " ".repeat(n));
/** A character no b64token may hold (space and "=" have their own rules and properties). */
const foreignChar = fc
  .string({ unit: "grapheme", minLength: 1, maxLength: 1 })
  .filter((c) => !B64_ALPHABET.includes(c) && c !== "=" && c !== " ");

describe("parseBearer (RFC 6750 §2.1)", () => {
  it("round-trips any b64token behind any case of the scheme and one or more spaces", () => {
    fc.assert(
      fc.property(anyCaseScheme, spaces, b64token(), (scheme, sp, token) => {
        expect(parseBearer(`${scheme}${sp}${token}`)).toEqual({ token });
      }),
    );
  });

  it("accepts a token of exactly MAX_TOKEN_LENGTH and refuses one character more", () => {
    fc.assert(
      fc.property(spaces, fc.boolean(), (sp, longer) => {
        const token = "a".repeat(MAX_TOKEN_LENGTH + (longer ? 1 : 0));
        expect(parseBearer(`Bearer${sp}${token}`)).toEqual(longer ? "malformed" : { token });
      }),
      { numRuns: 20 },
    );
  });

  it("answers malformed when any character outside the b64token alphabet follows the scheme", () => {
    fc.assert(
      fc.property(b64token(), foreignChar, fc.nat(), (token, bad, at) => {
        const i = at % (token.length + 1);
        const header = `Bearer ${token.slice(0, i)}${bad}${token.slice(i)}`;
        expect(parseBearer(header)).toBe("malformed");
      }),
    );
  });

  it("answers malformed when padding is followed by more token characters", () => {
    fc.assert(
      fc.property(b64token(), b64char, (token, more) => {
        expect(parseBearer(`Bearer ${token}=${more}`)).toBe("malformed");
      }),
    );
  });

  it("answers malformed for another scheme, a missing separator or an empty token", () => {
    fc.assert(
      fc.property(fc.string({ unit: b64char, minLength: 1, maxLength: 8 }), b64token(), (scheme, token) => {
        fc.pre(scheme.toLowerCase() !== "bearer");
        expect(parseBearer(`${scheme} ${token}`)).toBe("malformed");
        expect(parseBearer(`Bearer${token}`)).toBe("malformed");
      }),
    );
    expect(parseBearer("Bearer ")).toBe("malformed");
    expect(parseBearer("Bearer")).toBe("malformed");
    expect(parseBearer("")).toBe("malformed");
    expect(parseBearer(undefined)).toBe("missing");
  });

  it("never throws, and only returns tokens made of the b64token alphabet", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "binary", maxLength: 300 }), fc.string()), (header) => {
        const parsed = parseBearer(header);
        if (typeof parsed === "string") expect(parsed).toBe("malformed");
        else {
          expect(parsed.token).toMatch(/^[A-Za-z0-9\-._~+/]+=*$/);
          expect(header.toLowerCase().startsWith("bearer ")).toBe(true);
          expect(header.endsWith(parsed.token)).toBe(true);
        }
      }),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// RFC 3986 §5.2.4 / §6.2.2: percent-decoding and dot-segment removal

/** True when no segment of `path` is "." or "..". */
function dotFree(path: string): boolean {
  return path.split("/").every((s) => s !== "." && s !== "..");
}

/** Targets a client might send: mixes of names, dots, encoded dots, encoded slashes and queries. */
const segmentPiece = fc.oneof(
  fc.stringMatching(/^[a-z0-9_~-]{1,6}$/),
  fc.constantFrom(
    ".",
    "..",
    "%2e",
    "%2E%2e",
    ".%2e",
    "%2e.",
    "...",
    ".a",
    "%2f",
    "%5c",
    "%25",
    "%41",
    "%c3%a9",
  ),
);
const target = fc
  .tuple(
    fc.array(segmentPiece, { maxLength: 8 }),
    fc.boolean(),
    fc.option(fc.stringMatching(/^[a-z=&./%0-9]{0,10}$/)),
  )
  .map(
    ([segs, trailing, query]) =>
      "/" + segs.join("/") + (trailing ? "/" : "") + (query === null ? "" : `?${query}`),
  );

describe("normalizeTarget (RFC 3986 §6.2.2)", () => {
  it("always yields paths that start with / and hold no dot segments", () => {
    fc.assert(
      fc.property(target, (t) => {
        const r = normalizeTarget(t);
        if (r === null) return;
        for (const p of [r.matchPath, r.forwardPath]) {
          expect(p.startsWith("/")).toBe(true);
          expect(dotFree(p)).toBe(true);
          expect(p).not.toContain("/./");
          expect(p).not.toContain("/../");
        }
      }),
    );
  });

  it("is idempotent: dot removal leaves matchPath alone, and normalising the forwarded target changes nothing", () => {
    fc.assert(
      fc.property(target, (t) => {
        const r = normalizeTarget(t);
        if (r === null) return;
        expect(removeDotSegments(r.matchPath)).toBe(r.matchPath);
        expect(normalizeTarget(r.forwardPath + r.search)).toEqual(r);
      }),
    );
  });

  it("keeps the query as sent", () => {
    fc.assert(
      fc.property(target, (t) => {
        const r = normalizeTarget(t);
        if (r === null) return;
        const q = t.indexOf("?");
        expect(r.search).toBe(q === -1 ? "" : t.slice(q));
      }),
    );
  });

  /** One step of a path under the prefix `/v1`, and how a client may spell it. */
  type Step = { kind: "name"; name: string } | { kind: "dot" } | { kind: "up" };
  const step: fc.Arbitrary<{ step: Step; spelled: string }> = fc.oneof(
    fc
      .oneof(fc.stringMatching(/^[a-z0-9_-]{1,5}$/), fc.constantFrom("...", ".a", "a.", "%2e%2e%2e"))
      .map((name) => ({ step: { kind: "name", name: name.replace(/%2e/g, ".") } as Step, spelled: name })),
    fc.constantFrom(".", "%2e", "%2E").map((spelled) => ({ step: { kind: "dot" } as Step, spelled })),
    fc
      .constantFrom("..", ".%2e", "%2e.", "%2e%2e", "%2E%2E")
      .map((spelled) => ({ step: { kind: "up" } as Step, spelled })),
  );

  /** The model: a stack of segments starting at ["v1"]; `escaped` once `..` pops "v1" itself. */
  function model(steps: Step[]): { path: string; escaped: boolean } {
    const stack = ["v1"];
    let escaped = false;
    for (const s of steps) {
      if (s.kind === "name") stack.push(s.name);
      else if (s.kind === "up") {
        if (stack.length <= 1) escaped = true;
        stack.pop();
      }
    }
    const last = steps.at(-1);
    const trailing = last !== undefined && last.kind !== "name";
    return { path: "/" + [...stack, ...(trailing ? [""] : [])].join("/"), escaped };
  }

  it("resolves prefix + dot/encoded-dot segments as the model does, leaving the prefix only on more .. than segments", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 10 }), fc.constantFrom("/", "%2f", "%2F"), (steps, sep) => {
        const t = "/v1" + steps.map((s) => sep + s.spelled).join("");
        const r = normalizeTarget(t);
        expect(r).not.toBeNull();
        const expected = model(steps.map((s) => s.step));
        expect(r!.matchPath).toBe(expected.path);
        expect(coversPrefix("/v1", r!.matchPath)).toBe(!expected.escaped);
        // With plain separators the upstream is sent exactly the resolved path.
        if (sep === "/") expect(r!.forwardPath).toBe(expected.path);
      }),
    );
  });

  it("percent-decodes as decodeURIComponent does on valid input", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 40 }), (s) => {
        const r = normalizeTarget("/" + encodeURIComponent(s));
        if (s.includes("\0")) {
          expect(r).toBeNull();
          return;
        }
        // An encoded backslash is matched as the separator some upstreams take it for.
        expect(r?.matchPath).toBe(removeDotSegments(("/" + s).replace(/\\/g, "/")));
      }),
    );
  });

  it("accepts a path of %XX bytes exactly when they are valid UTF-8 without NUL", () => {
    const utf8 = new TextDecoder("utf-8", { fatal: true });
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 12 }), (bytes) => {
        const t = "/v1/" + [...bytes].map((b) => "%" + b.toString(16).padStart(2, "0")).join("");
        let valid = true;
        try {
          valid = !utf8.decode(bytes).includes("\0");
        } catch {
          valid = false;
        }
        expect(normalizeTarget(t) !== null).toBe(valid);
      }),
    );
  });

  it("returns null for malformed escapes and never throws on any input", () => {
    const badEscape = fc
      .tuple(fc.stringMatching(/^[a-z/]{0,5}$/), fc.stringMatching(/^%([g-z].|.[g-z]|.?)$/))
      .map(([a, bad]) => `/${a}${bad}`)
      .filter((t) => !/%[0-9a-fA-F]{2}/.test(t));
    fc.assert(
      fc.property(badEscape, (t) => {
        expect(normalizeTarget(t)).toBeNull();
      }),
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: "binary" }),
          fc.string().map((s) => "/" + s),
        ),
        (t) => {
          expect(() => normalizeTarget(t)).not.toThrow();
        },
      ),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// SPEC §7: class path patterns, `*` = exactly one segment, a pattern covers everything below it

const literalSegment = fc.stringMatching(/^[a-z0-9._+()$^-]{1,6}$/).filter((s) => s !== "*");
const patternSegments = fc.array(fc.oneof(literalSegment, fc.constant("*")), { minLength: 1, maxLength: 4 });
/** A non-empty segment value (what a client puts where the pattern has `*`). */
const segmentValue = fc.stringMatching(/^[a-zA-Z0-9._~%-]{1,8}$/);

describe("compilePathPattern (SPEC §7)", () => {
  /** The pattern and one concrete path it names (`*` replaced by arbitrary segments). */
  const patternAndPath = patternSegments.chain((segs) =>
    fc
      .tuple(...segs.map((s) => (s === "*" ? segmentValue : fc.constant(s))))
      .map((values) => ({ segs, pattern: "/" + segs.join("/"), path: "/" + values.join("/") })),
  );

  it("matches the path it names, with or without a trailing slash in the pattern", () => {
    fc.assert(
      fc.property(patternAndPath, ({ pattern, path }) => {
        expect(compilePathPattern(pattern).test(path)).toBe(true);
        expect(compilePathPattern(pattern + "/").test(path)).toBe(true);
      }),
    );
  });

  it("matches any extension at a segment boundary", () => {
    fc.assert(
      fc.property(patternAndPath, fc.array(segmentValue, { maxLength: 3 }), ({ pattern, path }, more) => {
        const re = compilePathPattern(pattern);
        expect(re.test(path + "/")).toBe(true);
        expect(re.test([path, ...more].join("/"))).toBe(true);
      }),
    );
  });

  it("never matches a sibling whose last segment is longer, when that segment is literal", () => {
    fc.assert(
      fc.property(patternAndPath, segmentValue, ({ segs, pattern, path }, suffix) => {
        fc.pre(segs.at(-1) !== "*");
        expect(compilePathPattern(pattern).test(path + suffix)).toBe(false);
      }),
    );
    expect(compilePathPattern("/v1/search").test("/v1/searching")).toBe(false);
  });

  it("never matches a path whose literal segment differs (regex characters are literal)", () => {
    fc.assert(
      fc.property(patternAndPath, fc.nat(), fc.constantFrom("x", "Q", "_", "."), ({ segs, path }, at, ch) => {
        const literals = segs.map((s, i) => (s === "*" ? -1 : i)).filter((i) => i >= 0);
        fc.pre(literals.length > 0);
        const i = literals[at % literals.length]!;
        const seg = segs[i]!;
        const changed = seg.slice(0, -1) + (seg.endsWith(ch) ? "Z" : ch);
        const parts = path.split("/");
        parts[i + 1] = changed;
        expect(compilePathPattern("/" + segs.join("/")).test(parts.join("/"))).toBe(false);
      }),
    );
  });

  it("lets * stand for exactly one non-empty segment", () => {
    fc.assert(
      fc.property(literalSegment, segmentValue, segmentValue, literalSegment, (a, x, y, b) => {
        const re = compilePathPattern(`/${a}/*/${b}`);
        expect(re.test(`/${a}/${x}/${b}`)).toBe(true);
        expect(re.test(`/${a}//${b}`)).toBe(false);
        fc.pre(y !== b);
        expect(re.test(`/${a}/${x}/${y}/${b}`)).toBe(false);
      }),
    );
  });

  it("covers every path with the pattern /", () => {
    fc.assert(
      fc.property(target, (t) => {
        expect(compilePathPattern("/").test(t)).toBe(true);
      }),
    );
  });
});

describe("coversPrefix (routes, SPEC §7)", () => {
  const prefix = fc.array(literalSegment, { minLength: 1, maxLength: 3 }).map((s) => "/" + s.join("/"));

  it("covers the prefix itself and everything below it, never a longer sibling", () => {
    fc.assert(
      fc.property(prefix, segmentValue, (p, more) => {
        expect(coversPrefix(p, p)).toBe(true);
        expect(coversPrefix(p, `${p}/${more}`)).toBe(true);
        expect(coversPrefix(p, p + more)).toBe(false);
        expect(coversPrefix(`${p}/`, `${p}/${more}`)).toBe(true);
      }),
    );
  });
});
