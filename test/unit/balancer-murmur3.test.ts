/**
 * MurmurHash3_x86_32 as the consistent-hash balancer uses it: a byte-wise transcription of
 * `MurmurHash3_x86_32` (aappleby/smhasher src/MurmurHash3.cpp) checked against published test
 * vectors, then the string version checked against it over the UTF-16LE bytes of any string.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { murmur3Utf16, murmur3Utf16Pair } from "../../gateway/proxy/balancing/murmur3.js";

/** The reference function, byte by byte (little-endian blocks, 1 to 3 byte tail). */
function murmur3Bytes(data: Uint8Array, seed: number): number {
  const rotl = (x: number, r: number): number => (x << r) | (x >>> (32 - r));
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  let h = seed | 0;
  const blocks = data.length >> 2;
  for (let b = 0; b < blocks; b++) {
    const o = b * 4;
    let k = data[o]! | (data[o + 1]! << 8) | (data[o + 2]! << 16) | (data[o + 3]! << 24);
    k = Math.imul(rotl(Math.imul(k, c1), 15), c2);
    h = (Math.imul(rotl(h ^ k, 13), 5) + 0xe6546b64) | 0;
  }
  const t = blocks * 4;
  const rest = data.length & 3; // the reference's fall-through switch over the tail
  if (rest > 0) {
    let k = data[t]!;
    if (rest >= 2) k ^= data[t + 1]! << 8;
    if (rest === 3) k ^= data[t + 2]! << 16;
    h ^= Math.imul(rotl(Math.imul(k, c1), 15), c2);
  }
  h ^= data.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const bytes = (...b: number[]): Uint8Array => Uint8Array.from(b);
const ascii = (s: string): Uint8Array => new TextEncoder().encode(s);

describe("MurmurHash3_x86_32", () => {
  // Test vectors published for MurmurHash3_x86_32 (the widely quoted set by Ian Boyd).
  it.each([
    [bytes(), 0, 0],
    [bytes(), 1, 0x514e28b7],
    [bytes(), 0xffffffff, 0x81f16f39],
    [bytes(0xff, 0xff, 0xff, 0xff), 0, 0x76293b50],
    [bytes(0x21, 0x43, 0x65, 0x87), 0, 0xf55b516b],
    [bytes(0x21, 0x43, 0x65, 0x87), 0x5082edee, 0x2362f9de],
    [bytes(0x21, 0x43, 0x65), 0, 0x7e4a8634],
    [bytes(0x21, 0x43), 0, 0xa0f7b07a],
    [bytes(0x21), 0, 0x72661cf4],
    [bytes(0, 0, 0, 0), 0, 0x2362f9de],
    [bytes(0, 0, 0), 0, 0x85f0b427],
    [bytes(0, 0), 0, 0x30f4c306],
    [bytes(0), 0, 0x514e28b7],
    [ascii("aaaa"), 0x9747b28c, 0x5a97808a],
    [ascii("Hello, world!"), 0x9747b28c, 0x24884cba],
    [ascii("The quick brown fox jumps over the lazy dog"), 0x9747b28c, 0x2fa826cd],
  ])("reference transcription: %o with seed %d", (data, seed, expected) => {
    expect(murmur3Bytes(data, seed)).toBe(expected);
  });

  it("over a string equals the reference over its UTF-16LE bytes (lone surrogates included)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 64 }), fc.integer(), (text, seed) => {
        expect(murmur3Utf16(text, seed)).toBe(murmur3Bytes(Buffer.from(text, "utf16le"), seed));
      }),
    );
  });

  it("computes two seeds in one pass exactly as two single calls", () => {
    const out = new Uint32Array(2);
    fc.assert(
      fc.property(fc.string({ maxLength: 64 }), fc.integer(), fc.integer(), (text, a, b) => {
        murmur3Utf16Pair(text, a, b, out);
        expect([out[0], out[1]]).toEqual([murmur3Utf16(text, a), murmur3Utf16(text, b)]);
      }),
    );
  });
});
