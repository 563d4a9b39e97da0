/**
 * The primary's view of one worker (SPEC §15): its PID, whether it serves and is ready, and the
 * exchanges of the protocol in `messages.ts` — a request is answered, or the worker is gone, or
 * the time is up, never left waiting.
 */
import type { Worker } from "node:cluster";
import { isGatewayMessage, type FromWorker, type ToWorker } from "./messages.js";
import type { Milliseconds } from "../base/clock.js";

/**
 * A matcher for {@link Member.waitFor}: messages of `type` (and, for an exchange, of `id`).
 * @example member.waitFor(is("gw:prepared", 7), 10_000)
 */
export const is =
  <K extends FromWorker["type"]>(type: K, id?: number) =>
  (m: FromWorker): m is Extract<FromWorker, { type: K }> =>
    m.type === type && (id === undefined || (m as { id?: number }).id === id);

interface Wait {
  match(m: FromWorker): boolean;
  resolve(m: FromWorker | null): void;
}

/** One worker process of the group. */
export class Member {
  readonly pid: number;
  /** Serving the API port (`gw:listening` seen). */
  listening = false;
  /** It has served once (a worker that exits before failed to start). */
  served = false;
  /** Its last `/readyz` answer. */
  ready = false;
  /** The process has exited. */
  exited = false;
  private readonly waits = new Set<Wait>();

  constructor(readonly worker: Worker) {
    this.pid = worker.process.pid!;
    worker.on("message", (m: unknown) => {
      if (isGatewayMessage<FromWorker>(m)) this.onMessage(m);
    });
    worker.once("exit", () => {
      this.exited = true;
      this.listening = false;
      for (const w of this.waits) w.resolve(null);
      this.waits.clear();
    });
  }

  /** Sends unless the channel is closed (the worker is then exiting; its `exit` tells the rest). */
  send(message: ToWorker): void {
    if (this.worker.isConnected()) this.worker.send(message, undefined, {}, () => undefined);
  }

  /**
   * @returns the first message `match` accepts, or null when the worker exits or `timeoutMs` passes
   */
  waitFor<T extends FromWorker>(
    match: (m: FromWorker) => m is T,
    timeoutMs: Milliseconds,
  ): Promise<T | null> {
    if (this.exited) return Promise.resolve(null);
    return new Promise((resolve) => {
      const wait: Wait = {
        match,
        resolve: (m) => {
          clearTimeout(timer);
          this.waits.delete(wait);
          resolve(m as T | null);
        },
      };
      const timer = setTimeout(() => wait.resolve(null), timeoutMs);
      this.waits.add(wait);
    });
  }

  /** Sends `message` and waits for the answer `match` accepts (see {@link waitFor}). */
  ask<T extends FromWorker>(
    message: ToWorker,
    match: (m: FromWorker) => m is T,
    timeoutMs: Milliseconds,
  ): Promise<T | null> {
    const answer = this.waitFor(match, timeoutMs);
    this.send(message);
    return answer;
  }

  private onMessage(m: FromWorker): void {
    if (m.type === "gw:ready") this.ready = m.ready;
    else if (m.type === "gw:listening") this.listening = this.served = true;
    for (const w of this.waits) if (w.match(m)) w.resolve(m);
  }
}
