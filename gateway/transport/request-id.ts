/**
 * Generated request ids (SPEC §3: `X-Request-Id` is taken from the request or generated): RFC 9562
 * version 4 UUIDs, as `crypto.randomUUID()` makes them, written as one flat string. Node's
 * `randomUUID()` concatenates 20 pieces per id (about 0.6 KiB of intermediate strings per request
 * in the allocation profile); here the 36 characters are written into one reused buffer and read
 * out once. The random bytes come from the same CSPRNG, drawn 4 KiB at a time.
 */
import { randomFillSync } from "node:crypto";

/** Ids drawn per refill of the random pool (16 bytes each). */
const IDS_PER_POOL = 256;
const pool = Buffer.alloc(16 * IDS_PER_POOL);
let next = IDS_PER_POOL;
const out = Buffer.alloc(36);
/** ASCII code of each nibble's hex digit. */
const HEX = Buffer.from("0123456789abcdef", "latin1");
/** Where each of the 16 bytes' two digits go (the dashes sit at 8, 13, 18 and 23). */
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
out.write("-", 8, "latin1");
out.write("-", 13, "latin1");
out.write("-", 18, "latin1");
out.write("-", 23, "latin1");

/** A new random (version 4) UUID, lower-case: `xxxxxxxx-xxxx-4xxx-Nxxx-xxxxxxxxxxxx`, N in 8–b. */
export function newRequestId(): string {
  if (next === IDS_PER_POOL) {
    randomFillSync(pool);
    next = 0;
  }
  const base = 16 * next++;
  for (let i = 0; i < 16; i++) {
    let b = pool[base + i]!;
    if (i === 6) b = (b & 0x0f) | 0x40;
    else if (i === 8) b = (b & 0x3f) | 0x80;
    const at = AT[i]!;
    out[at] = HEX[b >> 4]!;
    out[at + 1] = HEX[b & 0x0f]!;
  }
  return out.toString("latin1", 0, 36);
}
