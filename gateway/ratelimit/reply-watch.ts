/**
 * The Redis store's command timeout, kept as SPEC §4 asks: `command_timeout_ms` measures Redis, not
 * the gateway's event loop, and one slow reply does not by itself declare an outage. ioredis's own
 * `commandTimeout` is a `setTimeout` per command that rejects when it fires (ioredis 5.9.2
 * `built/Command.js` `setTimeout`); timers run before the poll phase that reads sockets, so a
 * replica whose event loop was busy for longer than the timeout discarded replies already waiting
 * in its socket, and each such call was answered from the memory fallback. The gateway keeps the
 * timeout itself:
 *
 * - **From the write.** A call's time starts when its command is written: the store stamps every
 *   call of an event-loop turn when it uncorks that turn's batch ({@link ReplyWatch.sent}), so time
 *   the gateway spent before writing is not counted as Redis's.
 * - **After the poll phase.** One timer per store, for the oldest waiting call. When it fires, the
 *   verdict waits for two `setImmediate`s: the first runs after the poll phase of the timer's own
 *   loop iteration and notes the time; the second runs after the next poll phase, which reads
 *   every reply that reached the socket before the first (even one that came while the earlier
 *   poll phase was busy with other sockets). So a reply that arrived in time is never discarded.
 * - **Late is not failed.** A call still without a reply `timeoutMs` after its write is *late*, and
 *   keeps waiting while Redis keeps answering: late calls fail (all waiting calls together, each
 *   with {@link ReplyTimeoutError}) only when no reply at all arrives for a further `timeoutMs`.
 *   Why: a pause of Redis or of the machine (a loaded core, a GC, CPU steal) delays every reply in
 *   flight at once and Redis then works through them; a Redis that does not answer stays silent.
 *   Requiring one command timeout of silence after the first late call tells the two apart, and
 *   answering a late call from the memory fallback would admit it twice (Redis counts it too).
 *   The cost: a Redis that stops answering is declared so after two command timeouts, not one.
 * - **Bounded.** No call waits longer than {@link MAX_WAIT_TIMEOUTS} command timeouts from its
 *   write, however slowly Redis keeps answering.
 *
 * A call that fails stays in ioredis's queue until its reply (or the connection's end) arrives, so
 * the connection's reply order is never disturbed.
 */
import { systemClock } from "../base/clock.js";

/** The longest a call waits, in command timeouts from its write, while Redis answers slowly. */
export const MAX_WAIT_TIMEOUTS = 10;

/** A Redis call that got no reply in time (SPEC §4; the rule in `reply-watch.ts`). */
export class ReplyTimeoutError extends Error {
  /**
   * @param timeoutMs - `command_timeout_ms` (ms)
   * @param silent - true: Redis sent nothing for a command timeout after the call was late; false:
   *   the call reached {@link MAX_WAIT_TIMEOUTS}
   */
  constructor(
    readonly timeoutMs: number,
    silent: boolean,
  ) {
    super(
      silent
        ? `no reply within ${timeoutMs} ms of the command's write, then nothing from Redis for ${timeoutMs} ms more`
        : `no reply within ${MAX_WAIT_TIMEOUTS * timeoutMs} ms of the command's write`,
    );
    this.name = "ReplyTimeoutError";
  }
}

/** The write time shared by every call of one event-loop turn (NaN until written). */
interface Turn {
  sentAtMs: number;
}

/** A call {@link ReplyWatch.begin} bounds, handed back to {@link ReplyWatch.end}. */
export interface WaitingCall {
  readonly done: boolean;
}

/** One call waiting for its reply. */
interface Waiting {
  turn: Turn;
  done: boolean;
  reject: (err: Error) => void;
}

/** Compact the queue once this many settled entries sit before its head. */
const COMPACT_AT = 1024;

/** Reply deadlines of one store's calls. */
export class ReplyWatch {
  private queue: (Waiting | undefined)[] = [];
  private head = 0;
  private turn: Turn | null = null;
  /** Replies received so far (progress, compared between checks). */
  private replies = 0;
  /** Since when late calls have waited with no reply at all (NaN: none late). */
  private silentSinceMs = Number.NaN;
  /** {@link replies} at `silentSinceMs`. */
  private repliesMark = 0;
  /** Armed from the timer until the second pass of {@link check}. */
  private timer: NodeJS.Timeout | undefined;
  /** `now()` at the first pass of the current check. */
  private checkAtMs = 0;
  private closed = false;
  private readonly maxWaitMs: number;

  /**
   * @param timeoutMs - `redis.command_timeout_ms` (ms)
   * @param now - monotonic clock (ms) @default the system clock's `monotonicMs`
   */
  constructor(
    private readonly timeoutMs: number,
    private readonly now: () => number = systemClock.monotonicMs,
  ) {
    this.maxWaitMs = MAX_WAIT_TIMEOUTS * timeoutMs;
  }

  /**
   * Bounds a call's reply. The call counts as written at the next {@link sent}.
   * @param reply - the client's promise of the reply
   * @returns the reply, or a rejection with {@link ReplyTimeoutError} (the rule above)
   */
  track<T>(reply: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const w = this.enqueue(reject);
      reply.then(
        (v) => {
          this.settled(w);
          resolve(v);
        },
        (err: unknown) => {
          this.settled(w);
          reject(err as Error);
        },
      );
    });
  }

  /**
   * Bounds the reply of a command the caller holds (the limiter's own `Command`): no promise of
   * the watch's around it. The call counts as written at the next {@link sent}; the caller tells
   * {@link end} when its reply or error arrived.
   * @param fail - rejects the command (ioredis's `Command.reject`) with {@link ReplyTimeoutError}
   *   when the rule above says so; its reply, if it still comes, is then not seen (the command's
   *   promise has settled), so it does not count as Redis's progress for the calls behind it
   */
  begin(fail: (err: Error) => void): WaitingCall {
    return this.enqueue(fail);
  }

  /** The reply (or error) of a call {@link begin} bounds arrived; nothing when the watch failed it. */
  end(call: WaitingCall): void {
    const w = call as Waiting;
    if (!w.done) this.settled(w);
  }

  private enqueue(reject: (err: Error) => void): Waiting {
    this.turn ??= { sentAtMs: Number.NaN };
    const w: Waiting = { turn: this.turn, done: false, reject };
    this.queue.push(w);
    return w;
  }

  /**
   * A reply arrived. A settled call leaves the queue at once when it is the oldest (replies come in
   * order on a connection, so it nearly always is): the queue holds the calls in flight, not every
   * call since the timer was armed, which kept each call's promise and reply alive for up to two
   * command timeouts and had them promoted to the old generation.
   */
  private settled(w: Waiting): void {
    this.replies++;
    w.done = true;
    if (this.queue[this.head] === w) this.oldest();
  }

  /** The calls tracked since the last call were written now: their time starts. */
  sent(): void {
    if (this.turn === null) return;
    this.turn.sentAtMs = this.now();
    this.turn = null;
    this.arm();
  }

  /** Calls held (a count): those waiting, and settled ones behind an older call still waiting. */
  get held(): number {
    return this.queue.length - this.head;
  }

  /** Stops the timer; calls still waiting settle with their connection (closed by the store). */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    if (this.timer !== undefined || this.closed) return;
    const oldest = this.oldest();
    if (oldest === undefined) this.silentSinceMs = Number.NaN;
    if (oldest === undefined || Number.isNaN(oldest.turn.sentAtMs)) return;
    const sent = oldest.turn.sentAtMs;
    const at = Number.isNaN(this.silentSinceMs)
      ? sent + this.timeoutMs
      : Math.min(this.silentSinceMs + this.timeoutMs, sent + this.maxWaitMs);
    this.timer = setTimeout(this.fired, Math.max(0, at - this.now()));
    this.timer.unref();
  }

  /** The oldest call still waiting, settled ones dropped from the head. */
  private oldest(): Waiting | undefined {
    const q = this.queue;
    while (this.head < q.length && q[this.head]!.done) q[this.head++] = undefined;
    if (this.head >= COMPACT_AT && this.head * 2 >= q.length) {
      this.queue = q.slice(this.head);
      this.head = 0;
    }
    return this.queue[this.head];
  }

  /** Timers run before the poll phase: the verdict comes after it (two passes, see above). */
  private readonly fired = (): void => {
    setImmediate(this.check, true);
  };

  private readonly check = (first: boolean): void => {
    if (this.closed) return;
    if (first) {
      this.checkAtMs = this.now();
      setImmediate(this.check, false);
      return;
    }
    this.timer = undefined;
    const at = this.checkAtMs;
    const oldest = this.oldest();
    const sent = oldest === undefined ? Number.NaN : oldest.turn.sentAtMs;
    if (oldest === undefined || Number.isNaN(sent) || at - sent < this.timeoutMs) {
      this.silentSinceMs = Number.NaN; // nothing late
    } else if (Number.isNaN(this.silentSinceMs) || this.replies !== this.repliesMark) {
      // Late, but Redis has answered since the last look (or this is the first look): wait on.
      this.silentSinceMs = at;
      this.repliesMark = this.replies;
      if (at - sent >= this.maxWaitMs) this.failUntil(at - this.maxWaitMs, false);
    } else if (at - this.silentSinceMs >= this.timeoutMs) {
      // Late calls and nothing from Redis for a command timeout: it does not answer.
      this.failUntil(at, true);
      this.silentSinceMs = Number.NaN;
    }
    this.arm();
  };

  /** Fails every waiting call written at or before `sentBeforeMs`. */
  private failUntil(sentBeforeMs: number, silent: boolean): void {
    for (let w = this.oldest(); w !== undefined; w = this.oldest()) {
      if (Number.isNaN(w.turn.sentAtMs) || w.turn.sentAtMs > sentBeforeMs) break;
      w.done = true;
      w.reject(new ReplyTimeoutError(this.timeoutMs, silent));
    }
  }
}
