/**
 * One try of a plain exchange: the undici handler (undici 7 handler API) of one dispatch. Each try
 * has its own, so the callbacks of a try the exchange gave up (for a retry, a timeout or a client
 * that left) are told apart from the current one's and ignored.
 */
import type { Dispatcher } from "undici";
import type { HeaderMap } from "../base/request-facts.js";
import type { Endpoint } from "./endpoint.js";
import { afterPendingIo } from "../base/after-pending-io.js";
import { RESPONSE_TIMEOUT_CODE } from "./upstream-errors.js";

/** Aborts a try that was given up. */
export const GIVEN_UP = new Error("try given up");

/** Fails (and aborts) a try whose `per_try_timeout_ms` or whose route's `timeout_ms` passed. */
export const TRY_TIMED_OUT: NodeJS.ErrnoException = Object.assign(new Error("upstream try timed out"), {
  code: RESPONSE_TIMEOUT_CODE,
});

/** The exchange a try reports to while it has not ended. */
export interface AttemptOwner {
  head(
    attempt: Attempt,
    controller: Dispatcher.DispatchController,
    status: number,
    headers: HeaderMap,
    message: string,
  ): void;
  data(controller: Dispatcher.DispatchController, chunk: Buffer): void;
  end(attempt: Attempt): void;
  failed(attempt: Attempt, err: Error): void;
}

/** One try: undici's handler, forwarding to its exchange while it is the current try. */
export class Attempt implements Dispatcher.DispatchHandler {
  controller: Dispatcher.DispatchController | null = null;
  /** Accounted for and given up or finished: undici's later callbacks are ignored. */
  ended = false;
  /** Its response head arrived (a per-try timeout that fired meanwhile no longer applies). */
  answered = false;
  timer: NodeJS.Timeout | null = null;

  constructor(
    readonly exchange: AttemptOwner,
    readonly endpoint: Endpoint,
    /** A retry (counted in the upstream's retry budget until it ends). */
    readonly retry: boolean,
    /** When it was sent (monotonic ms): its time to head is measured from then. */
    readonly startedMs: number,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.ended) controller.abort(GIVEN_UP);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
    statusMessage?: string,
  ): void {
    // 1xx interim responses are not relayed (the transport answers `Expect: 100-continue` itself).
    if (this.ended || statusCode < 200) return;
    this.answered = true;
    this.exchange.head(this, controller, statusCode, headers as HeaderMap, statusMessage ?? "");
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.ended) this.exchange.data(controller, chunk);
  }

  onResponseEnd(): void {
    if (!this.ended) this.exchange.end(this);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (!this.ended) this.exchange.failed(this, err);
  }
}

/**
 * A try's own timeout (`per_try_timeout_ms`): it fails as a timeout, which may be retried, unless
 * its head is among the I/O already arrived (read before deciding).
 */
export function onTryTimeout(attempt: Attempt): void {
  attempt.timer = null;
  afterPendingIo(tryTimedOut, attempt);
}

function tryTimedOut(attempt: Attempt): void {
  if (attempt.ended || attempt.answered) return;
  attempt.exchange.failed(attempt, TRY_TIMED_OUT);
  attempt.controller?.abort(TRY_TIMED_OUT);
}
