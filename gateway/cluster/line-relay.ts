/**
 * The one writer of the process group's stdout (SPEC §15: access lines from different workers
 * never interleave within a line, whatever stdout is). Each worker writes its lines, in chunks of
 * any size, to its own pipe to the primary; the relay forwards only whole lines, so a line is
 * always written by one `write` of one process. The kernel's atomicity of concurrent writes is
 * never relied on: it holds for pipes only up to `PIPE_BUF` (4096 bytes) and not at all for TCP
 * sockets, and pino lines (a reload's problem list, an error) can be longer.
 *
 * With a slow reader the destination's buffer fills and the relay stops reading the workers'
 * pipes until it drains; the workers' own asynchronous log buffers then hold their lines, as a
 * single gateway's does.
 */
import type { Readable } from "node:stream";

/** Where whole lines go: a sonic-boom (`pino.destination`) or a `Writable`. */
export interface LineSink {
  /** @returns false when the caller should wait for `drain` */
  write(chunk: string): boolean;
  once(event: "drain", listener: () => void): unknown;
}

/** Forwards whole lines of several streams to one {@link LineSink}. */
export class LineRelay {
  private readonly sources = new Set<Readable>();
  private waiting = false;
  private readonly idle: (() => void)[] = [];

  constructor(private readonly sink: LineSink) {}

  /**
   * Relays `stream` until it ends. A last line without its newline (a worker killed in the middle
   * of a write) is dropped rather than written broken.
   */
  add(stream: Readable): void {
    this.sources.add(stream);
    let tail: Buffer | null = null;
    stream.on("data", (chunk: Buffer) => {
      const data = tail === null ? chunk : Buffer.concat([tail, chunk]);
      const end = data.lastIndexOf(10) + 1; // after the last "\n"
      tail = end === data.length ? null : data.subarray(end);
      // A newline byte never occurs inside a UTF-8 sequence: whole lines decode on their own.
      if (end > 0 && !this.sink.write(data.toString("utf8", 0, end))) this.pause();
    });
    stream.once("close", () => {
      this.sources.delete(stream);
      if (this.sources.size === 0) for (const done of this.idle.splice(0)) done();
    });
  }

  /**
   * Resolves when every stream added so far has closed (its last lines forwarded), or after
   * `timeoutMs`, whichever comes first.
   */
  drained(timeoutMs: number): Promise<void> {
    if (this.sources.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.idle.push(() => (clearTimeout(timer), resolve()));
    });
  }

  private pause(): void {
    if (this.waiting) return;
    this.waiting = true;
    for (const s of this.sources) s.pause();
    this.sink.once("drain", () => {
      this.waiting = false;
      for (const s of this.sources) s.resume();
    });
  }
}
