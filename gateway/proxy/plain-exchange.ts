/**
 * One plain exchange and its tries (SPEC §16, §17): each try goes to an endpoint the upstream
 * picks, through its undici pool, with its own handler ({@link Attempt}) so a given-up try's
 * callbacks are told apart. A failed try is retried when the route's policy, the call and the
 * retry budget allow it and nothing of the response has reached the client; the answering try's
 * head is decorated by the core and written by the transport, its body streams with backpressure.
 *
 * Timers exist only where configured: a try's `per_try_timeout_ms`, the route's `timeout_ms` (first
 * try to response head; undici's header timer is off then, so a route may be longer or shorter
 * than its upstream's `timeout_ms`), a backoff. Without them undici's own header and body timers
 * (`upstreams.<name>.timeout_ms`, per call, on a coarse clock: up to about 1 s late) bound a try.
 */
import type { Dispatcher } from "undici";
import { afterPendingIo } from "../base/after-pending-io.js";
import { Attempt, GIVEN_UP, onTryTimeout, TRY_TIMED_OUT, type AttemptOwner } from "./attempt.js";
import type { HeaderMap } from "../base/request-facts.js";
import type { UpstreamErrorReason } from "../base/results.js";
import type { RequestTrace } from "../observability/tracing/request-trace.js";
import type { ResponseTarget } from "./client-io.js";
import type { Endpoint } from "./endpoint.js";
import { BODY_TOO_LARGE } from "./body-limit.js";
import type { ExchangeHooks, ExchangeResult, HeadWriter, PlainRequest } from "./exchange-types.js";
import { HeldAnswer } from "./held-answer.js";
import { backoffMs } from "../config/retry-policy.js";
import { settlement } from "./settlement.js";
import type { Upstream } from "./upstream.js";
import { upstreamErrorReason } from "./upstream-errors.js";

/** The exchange of a response object, for the hoisted `close` and `drain` listeners. */
const EXCHANGE: unique symbol = Symbol("gateway.exchange");
type Relayed = ResponseTarget & { [EXCHANGE]?: Running };

/** What the hoisted listeners and timers call on an exchange, whatever its context and target. */
interface Running {
  readonly current: Attempt | null;
  left(): void;
  timedOut(): void;
  relaunch(): void;
}

const CLIENT_ABORTED = new Error("client closed the connection");

/** One plain exchange: its tries and the result it resolves to. */
export class PlainExchange<C, R extends ResponseTarget> implements ExchangeResult<C>, AttemptOwner {
  status = 0;
  failure: UpstreamErrorReason | null = null;
  responseStarted = false;
  clientLeft = false;
  attempts = 0;
  bodyTooLarge = false;
  endpoint: Endpoint;
  /** Settled: a later client `close` has nothing to abort. */
  done = false;
  /** The try in progress, or null during a backoff. */
  current: Attempt | null = null;
  private backoff: NodeJS.Timeout | null = null;
  private deadline: NodeJS.Timeout | null = null;
  resolve: ((r: ExchangeResult<C>) => void) | null = null;
  /** The answer while its head waits for the core (SPEC §22 charge), else null. */
  private held: HeldAnswer | null = null;

  constructor(
    private readonly upstream: Upstream,
    private readonly request: PlainRequest,
    private readonly res: R,
    readonly context: C,
    private readonly hooks: ExchangeHooks<C>,
    private readonly writer: HeadWriter<R>,
    private readonly trace: RequestTrace | null,
  ) {
    this.endpoint = upstream.pick(request.hashKey);
  }

  start(): Promise<ExchangeResult<C>> {
    const done = settlement<ExchangeResult<C>>(this);
    (this.res as Relayed)[EXCHANGE] = this;
    this.res.on("close", onClientClose); // emitted once; `on` skips once()'s wrapper
    if (this.request.timeoutMs > 0) this.deadline = setTimeout(onDeadline, this.request.timeoutMs, this);
    this.launch(this.endpoint, false);
    return done;
  }

  /** Sends one try to `endpoint` (a retry was counted in the ledger when it was decided). */
  private launch(endpoint: Endpoint, retry: boolean): void {
    const { request, trace } = this;
    this.endpoint = endpoint;
    this.attempts++;
    if (retry) this.upstream.ledger.retryDispatched(endpoint);
    else this.upstream.ledger.tryDispatched(endpoint);
    endpoint.metrics.requests.inc();
    this.hooks.attemptStarted(this.context, endpoint);
    trace?.startUpstream(request.method, endpoint.address, endpoint.port, request.headers);
    const attempt = new Attempt(this, endpoint, retry, this.upstream.clock.monotonicMs());
    this.current = attempt;
    const perTry = request.retry?.perTryTimeoutMs ?? 0;
    if (perTry > 0) attempt.timer = setTimeout(onTryTimeout, perTry, attempt);
    endpoint.pool.dispatch(
      {
        path: endpoint.basePath + request.path,
        method: request.method as Dispatcher.HttpMethod,
        headers: request.headers,
        body: request.replay ?? request.upload,
        // A route's deadline, not undici's header timer, bounds the time to a head when it has one.
        headersTimeout: request.timeoutMs > 0 ? 0 : endpoint.timeouts.timeoutMs,
        bodyTimeout: endpoint.timeouts.timeoutMs,
      },
      attempt,
    );
  }

  /** The current try's response head: relayed, or given up for a retry of its status. */
  head(
    attempt: Attempt,
    controller: Dispatcher.DispatchController,
    status: number,
    headers: HeaderMap,
    message: string,
  ): void {
    this.trace?.upstreamResponded(status);
    this.upstream.answered(attempt.endpoint, status, attempt.startedMs);
    if (this.request.retry?.statuses.has(status) === true && this.mayRetry(attempt)) {
      this.finish(attempt);
      controller.abort(GIVEN_UP);
      this.retry();
      return;
    }
    if (this.deadline !== null) clearTimeout(this.deadline);
    if (attempt.timer !== null) clearTimeout(attempt.timer);
    this.status = status;
    const wait = this.hooks.upstreamHead(this.context, headers, attempt.endpoint, false, true);
    if (wait === null) return this.relayHead(status, message, headers);
    const held = (this.held = new HeldAnswer(controller, status, message, headers));
    void wait.then(() => {
      this.held = null;
      if (!this.done) held.release(this); // else the client left or the try failed meanwhile
    });
  }

  relayHead(status: number, message: string, headers: HeaderMap): void {
    this.writer.writeHead(this.res, status, message, headers);
    this.responseStarted = true;
  }

  relayEnd(): void {
    this.res.end();
    this.settle(null);
  }

  data(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.held !== null) return this.held.hold(chunk);
    if (!this.res.write(chunk)) {
      controller.pause();
      this.res.once("drain", onDrain);
    }
  }

  end(attempt: Attempt): void {
    if (this.held !== null) this.held.ended = true;
    else this.res.end();
    this.finish(attempt);
    if (this.held === null) this.settle(null);
  }

  /** The current try failed (or timed out): retried when allowed, else the exchange's failure. */
  failed(attempt: Attempt, err: Error): void {
    // The client left (abort, or a broken request body): there is no one to answer.
    if (this.clientLeft || this.res.destroyed || this.request.body.socket?.destroyed !== false) {
      this.left();
      return;
    }
    if (err === BODY_TOO_LARGE) {
      this.trace?.upstreamFailed("body_too_large");
      this.bodyTooLarge = true;
      this.finish(attempt);
      this.settle(null);
      return;
    }
    const reason = upstreamErrorReason(err);
    this.trace?.upstreamFailed(reason);
    this.upstream.failed(attempt.endpoint, reason);
    this.finish(attempt);
    if (!this.responseStarted && this.request.retry?.reasons.has(reason) === true && this.mayRetry(null)) {
      this.retry();
      return;
    }
    this.settle(reason);
  }

  /** The client went away: the try in progress is aborted, a pending retry dropped. */
  left(): void {
    if (this.done) return;
    this.clientLeft = true;
    const attempt = this.current;
    if (attempt !== null) {
      this.trace?.upstreamFailed("aborted");
      this.finish(attempt);
      attempt.controller?.abort(CLIENT_ABORTED);
    } else if (this.backoff !== null) {
      this.dropRetry();
    }
    this.settle(null);
  }

  /** The route's `timeout_ms` passed before any response head: 504, no more tries. */
  timedOut(): void {
    if (this.done || this.responseStarted) return;
    const attempt = this.current;
    if (attempt !== null) {
      this.trace?.upstreamFailed("timeout");
      this.upstream.failed(attempt.endpoint, "timeout");
      this.finish(attempt);
      attempt.controller?.abort(TRY_TIMED_OUT);
    } else if (this.backoff !== null) {
      this.dropRetry();
    }
    this.settle("timeout");
  }

  /**
   * Whether one more try is allowed: tries left, nothing sent, and the budget's consent, asked with
   * the failed try counted as ended (`ending`: that try while the ledger still counts it, or null).
   */
  private mayRetry(ending: Attempt | null): boolean {
    const policy = this.request.retry!;
    if (this.attempts > policy.attempts || this.clientLeft || this.responseStarted) return false;
    if (this.held !== null) return false; // the answer is being charged for
    return this.upstream.budget.tryRetry(ending);
  }

  /** Waits the backoff, then tries another endpoint (the budget put the retry in flight). */
  private retry(): void {
    this.current = null;
    const wait = backoffMs(this.request.retry!, this.attempts, this.upstream.clock.random());
    this.backoff = setTimeout(onBackoff, wait, this);
  }

  /** After the backoff. */
  relaunch(): void {
    this.backoff = null;
    if (this.done) return;
    this.launch(this.upstream.pickOther(this.endpoint, this.request.hashKey), true);
  }

  private dropRetry(): void {
    clearTimeout(this.backoff!);
    this.backoff = null;
    this.upstream.ledger.retryDropped();
  }

  /** A try's end, accounted once: its endpoint, the upstream's tries and retries in flight. */
  private finish(attempt: Attempt): void {
    if (attempt.ended) return;
    attempt.ended = true;
    if (attempt.timer !== null) clearTimeout(attempt.timer);
    this.upstream.ledger.tryEnded(attempt.endpoint, attempt.retry);
    if (this.current === attempt) this.current = null;
  }

  private settle(failure: UpstreamErrorReason | null): void {
    if (this.done) return;
    this.done = true;
    this.failure = failure;
    if (this.deadline !== null) clearTimeout(this.deadline);
    this.resolve!(this);
    this.resolve = null;
  }
}

function onClientClose(this: Relayed): void {
  this[EXCHANGE]?.left();
}

function onDrain(this: Relayed): void {
  this[EXCHANGE]?.current?.controller?.resume();
}

/** The route's `timeout_ms` fired: decided once the I/O already arrived is read. */
function onDeadline(exchange: Running): void {
  afterPendingIo(deadlinePassed, exchange);
}

function deadlinePassed(exchange: Running): void {
  exchange.timedOut();
}

function onBackoff(exchange: Running): void {
  exchange.relaunch();
}
