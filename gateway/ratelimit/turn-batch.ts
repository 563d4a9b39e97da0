/**
 * Write batching of the Redis store: the first call of an event-loop turn corks the connection and
 * a `setImmediate` (after the turn's I/O callbacks) uncorks it, so every call the turn issued
 * leaves in one `writev` and Redis reads them in one go; that moment is when the calls' reply
 * deadlines start ({@link ReplyWatch.sent}). Each call is still its own EVALSHA with its own
 * reply; nothing waits beyond the turn. Measured: one write syscall per call becomes one per turn
 * (16-64 concurrent clients: ~0.1 per call), 9 % less gateway CPU per request (README
 * "Performance"). ioredis's auto-pipelining aims at the same but allocates a pipeline per turn
 * (see redis-connection.ts). Cluster clients hold a connection per node and are not corked.
 */
import type { Writable } from "node:stream";
import { Redis } from "ioredis";
import type { RedisClient } from "./redis-connection.js";
import type { ReplyWatch } from "./reply-watch.js";

/** The calls of one event-loop turn, written together. */
export class TurnBatch {
  /** A flush is scheduled for this event-loop turn. */
  private flushing = false;
  /** The connection corked for this turn, or null. */
  private corked: Writable | null = null;

  /** @param watch - told when the turn's calls were written (their reply deadlines start) */
  constructor(
    private readonly client: RedisClient,
    private readonly watch: ReplyWatch,
  ) {}

  /** A call is about to be written in this turn: the first one corks the connection. */
  join(): void {
    if (this.flushing) return;
    this.flushing = true;
    const stream = this.client instanceof Redis ? this.client.stream : undefined;
    if (stream !== undefined) {
      stream.cork();
      this.corked = stream;
    }
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.flushing = false;
    const stream = this.corked;
    this.corked = null;
    stream?.uncork();
    this.watch.sent();
  };
}
