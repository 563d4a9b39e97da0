/**
 * Reads a request body whole, for a call that may be retried (SPEC §17: a body of at most 64 KiB
 * with a `Content-Length` is kept for replay).
 */
import type { Readable } from "node:stream";

/**
 * @param length - the announced `Content-Length` (bytes)
 * @returns the body, or null when the client went away (or sent another length) before its end
 */
export function readWhole(body: Readable, length: number): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer): void => {
      chunks.push(c);
      size += c.length;
    };
    const settle = (ok: boolean): void => {
      body.off("data", onData);
      body.off("end", onEnd);
      body.off("error", onFail);
      body.off("close", onClose);
      resolve(ok && size === length ? Buffer.concat(chunks, size) : null);
    };
    const onEnd = (): void => settle(true);
    const onFail = (): void => settle(false);
    // `close` before `end`: the client went away mid-body.
    const onClose = (): void => settle(false);
    body.on("data", onData);
    body.once("end", onEnd);
    body.once("error", onFail);
    body.once("close", onClose);
  });
}
