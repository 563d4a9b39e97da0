/**
 * An upstream answer whose head waits for the core before it is relayed (SPEC §22: the units an
 * answer charges are counted first, so the head the client gets already shows them). What arrives
 * of the body meanwhile is kept, in order, and relayed after the head; the body's end too.
 */
import type { Dispatcher } from "undici";
import type { HeaderMap } from "../base/request-facts.js";

/** Where a held answer goes once released. */
export interface HeldTarget {
  /** The head goes out; the response has started. */
  relayHead(status: number, message: string, headers: HeaderMap): void;
  /** A body chunk, relayed as any other (with its back-pressure). */
  data(controller: Dispatcher.DispatchController, chunk: Buffer): void;
  /** The body ended while held: end the response and settle the exchange. */
  relayEnd(): void;
}

/** One held answer: its head, the body chunks and end that arrived meanwhile. */
export class HeldAnswer {
  private readonly chunks: Buffer[] = [];
  /** The body ended while held. */
  ended = false;

  /** Pauses the upstream body: little arrives while the core decides. */
  constructor(
    private readonly controller: Dispatcher.DispatchController,
    private readonly status: number,
    private readonly message: string,
    private readonly headers: HeaderMap,
  ) {
    controller.pause();
  }

  hold(chunk: Buffer): void {
    this.chunks.push(chunk);
  }

  /** Relays the head, the held chunks, then the end or the rest of the body. */
  release(target: HeldTarget): void {
    target.relayHead(this.status, this.message, this.headers);
    for (const chunk of this.chunks) target.data(this.controller, chunk);
    this.chunks.length = 0;
    if (this.ended) target.relayEnd();
    else this.controller.resume();
  }
}
