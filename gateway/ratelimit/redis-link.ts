/**
 * The Redis store's view of its connection: whether a call may be sent, and, when one fails, what
 * really failed. ioredis reports a connection's cause only on its `error` event (`ECONNREFUSED`,
 * `ENOTFOUND`, a TLS error, `WRONGPASS`); a call made meanwhile fails with the generic "Stream
 * isn't writeable and enableOfflineQueue options is false" or "Connection is closed.". The link
 * keeps the last cause since the connection was last ready and names it instead.
 *
 * A database index that `SELECT` refuses (`redis://host/99` on a server with 16 databases) is
 * fatal: ioredis only emits the error and goes on in database 0 (ioredis 5.9.2
 * `built/redis/event_handler.js` `connectHandler`), so the link drops the connection for good and
 * every call fails with that cause; {@link RedisLink.started} rejects with it, so `gateway start`
 * stops with the error instead of counting in the wrong database.
 */
import type { Logger } from "pino";
import { LimitStoreError } from "./limiter.js";
import type { RedisClient } from "./redis-connection.js";
import { describeRedisError, type StoreFailure } from "./store-failure.js";

/** Connection state and failure causes of one ioredis client. */
export class RedisLink {
  /** Settles when the first connection attempt has an outcome; rejects on a fatal one. */
  readonly started: Promise<void>;
  /** The last failure of the connection since it was last ready; null while ready. */
  private failed: StoreFailure | null = null;
  /** A failure no reconnection can fix: every call fails with it. */
  private fatal: StoreFailure | null = null;
  private readyWaiter: Promise<void> | undefined;

  /**
   * @param timeoutMs - `command_timeout_ms`: a call waits for a connection being set up at most
   *   twice this long, as long as for a Redis that does not answer (`reply-watch.ts`) (ms)
   * @param connectTimeoutMs - bound on {@link started} (ms)
   * @param logger - connection errors at `debug`; outages are logged by the failover wrapper
   */
  constructor(
    private readonly client: RedisClient,
    private readonly timeoutMs: number,
    connectTimeoutMs: number,
    logger?: Logger,
  ) {
    // Without a listener an `error` event would crash the process.
    client.on("error", (err: Error) => {
      const f = describeRedisError(err);
      logger?.debug({ err: f.detail, reason: f.reason }, "redis client error");
      if (f.reason === "database") {
        this.fatal = f;
        client.disconnect();
      } else {
        this.failed = f;
      }
    });
    client.on("ready", () => {
      this.failed = null;
    });
    client.on("close", () => {
      this.failed ??= { reason: "connection", detail: "connection closed" };
    });
    this.started = new Promise<void>((resolve, reject) => {
      const settle = (): void => {
        clearTimeout(timer);
        client.off("ready", settle);
        client.off("error", settle);
        if (this.fatal === null) resolve();
        else reject(this.error(this.fatal, undefined));
      };
      const timer = setTimeout(settle, connectTimeoutMs);
      timer.unref();
      client.once("ready", settle);
      client.once("error", settle);
    });
    // Callers that never await it (tests, a reload's runtime) must not see an unhandled rejection.
    this.started.catch(() => undefined);
  }

  /**
   * Resolves when a call may be sent: at once while ready; while a connection is being set up,
   * when it is ready, but never later than two command timeouts.
   * @throws LimitStoreError (as a rejection) with the connection's cause when it failed, or a
   *   `timeout` when it was not ready in time
   */
  async usable(): Promise<void> {
    if (this.fatal !== null) throw this.error(this.fatal, undefined);
    if (this.client.status === "ready") return;
    // A connection that failed (refused, DNS, authentication...) fails the call at once.
    if (this.failed !== null) throw this.error(this.failed, undefined);
    const waitMs = 2 * this.timeoutMs;
    if (await readyWithin(this.whenReady(), waitMs)) return;
    throw this.error(
      this.failed ?? { reason: "timeout", detail: `not connected within ${waitMs} ms` },
      undefined,
    );
  }

  /**
   * The error a failed call rejects with: its own cause, or the connection's where the call only
   * saw the connection go (ioredis's generic messages).
   */
  failure(err: unknown): LimitStoreError {
    const f = describeRedisError(err);
    return this.error(f.reason === "connection" ? (this.fatal ?? this.failed ?? f) : f, err);
  }

  private error(f: StoreFailure, cause: unknown): LimitStoreError {
    return new LimitStoreError(`redis: ${f.detail}`, { cause, reason: f.reason });
  }

  private whenReady(): Promise<void> {
    this.readyWaiter ??= new Promise<void>((resolve) =>
      this.client.once("ready", () => {
        this.readyWaiter = undefined;
        resolve();
      }),
    );
    return this.readyWaiter;
  }
}

/**
 * True when `ready` resolves within `ms`. The verdict waits for a `setImmediate` after the timer, so
 * a `ready` already in the socket (read in the poll phase) wins over a late event loop.
 */
function readyWithin(ready: Promise<void>, ms: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => setImmediate(resolve, false), ms);
    void ready.then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}
