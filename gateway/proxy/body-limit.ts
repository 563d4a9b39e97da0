/**
 * The request body limit (SPEC §17), both of its halves: a `Content-Length` above the limit is
 * refused from the head ({@link announcedTooLarge}, the core's 413 before anything is read), and a
 * body without one is cut when it grows past it ({@link limitBody}): the bytes stream through
 * unchanged until the limit is passed, then the stream fails with {@link BODY_TOO_LARGE}, which
 * undici reports as the try's error and the exchange turns into a 413 (or a cut connection once the
 * response has started).
 */
import { Transform, type Readable, type TransformCallback } from "node:stream";

/** The error a limited body fails with (`code` `EBODYTOOLARGE`). */
export const BODY_TOO_LARGE: NodeJS.ErrnoException = Object.assign(new Error("request body too large"), {
  code: "EBODYTOOLARGE",
});

/**
 * @param limit - the most bytes allowed; 0 = no limit
 * @param contentLength - the request's `Content-Length` field, if any
 * @returns true when the head announces a body past `limit` (never read: 413 from the head)
 */
export function announcedTooLarge(limit: number, contentLength: string | string[] | undefined): boolean {
  return limit > 0 && typeof contentLength === "string" && Number(contentLength) > limit;
}

/** Counts the bytes through it and fails past `limit`. */
class BodyLimit extends Transform {
  private seen = 0;

  constructor(private readonly limit: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.limit) done(BODY_TOO_LARGE);
    else done(null, chunk);
  }
}

/**
 * @param body - the client's request body
 * @param limit - the most bytes allowed (> 0)
 * @returns a stream of the same bytes that fails once more than `limit` have passed; the client's
 *   stream is unpiped then (the transport decides what becomes of its connection)
 */
export function limitBody(body: Readable, limit: number): Readable {
  const limited = new BodyLimit(limit);
  body.on("error", (err) => limited.destroy(err));
  return body.pipe(limited);
}
