/**
 * MurmurHash3, x86 32-bit variant (Austin Appleby, public domain): `MurmurHash3_x86_32` and
 * `fmix32` in src/MurmurHash3.cpp (aappleby/smhasher). Non-cryptographic, fast, and with full
 * avalanche; used for rendezvous hashing where a key only needs to land evenly, not secretly.
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** Scratch for {@link murmur3Utf16}'s pair call. */
const SCRATCH = new Uint32Array(2);

/**
 * MurmurHash3_x86_32 of the string's UTF-16LE bytes, read two code units per 32-bit block (so no
 * byte buffer is built): the same value as the reference function over
 * `Buffer.from(text, "utf16le")`. One lane of {@link murmur3Utf16Pair}.
 * @param text - any string (lone surrogates included: code units are hashed as they are)
 * @param seed - 32-bit seed
 * @returns unsigned 32-bit hash
 */
export function murmur3Utf16(text: string, seed: number): number {
  murmur3Utf16Pair(text, seed, seed, SCRATCH);
  return SCRATCH[0]!;
}

/**
 * Two MurmurHash3_x86_32 of one string at once (seeds `seedA` and `seedB`), in one pass over its
 * code units: the values of `murmur3Utf16(text, seedA)` and `murmur3Utf16(text, seedB)`. Written
 * into `out` rather than returned, because a returned 32-bit value that V8 does not inline is boxed
 * (a heap allocation) and the balancer's pick must allocate nothing.
 * @param out - receives the two hashes: `out[0]` for `seedA`, `out[1]` for `seedB`
 */
export function murmur3Utf16Pair(text: string, seedA: number, seedB: number, out: Uint32Array): void {
  const units = text.length;
  let a = seedA | 0;
  let b = seedB | 0;
  let i = 0;
  for (; i + 1 < units; i += 2) {
    let k = text.charCodeAt(i) | (text.charCodeAt(i + 1) << 16) | 0;
    k = Math.imul(k, C1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, C2);
    a ^= k;
    a = (a << 13) | (a >>> 19);
    a = (Math.imul(a, 5) + 0xe6546b64) | 0;
    b ^= k;
    b = (b << 13) | (b >>> 19);
    b = (Math.imul(b, 5) + 0xe6546b64) | 0;
  }
  if (i < units) {
    // A two-byte tail (the reference's `case 2` falling into `case 1`).
    let k = text.charCodeAt(i);
    k = Math.imul(k, C1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, C2);
    a ^= k;
    b ^= k;
  }
  out[0] = fmix32(a ^ (units * 2));
  out[1] = fmix32(b ^ (units * 2));
}

/**
 * MurmurHash3's finalisation mix: a bijection on 32 bits where every input bit flips every output
 * bit with probability close to 1/2.
 * @param h - 32-bit value
 * @returns unsigned 32-bit value
 */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
