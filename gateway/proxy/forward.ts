/**
 * One plain-HTTP exchange on undici (Node's own HTTP/1.1 client): `pool.dispatch()` with one
 * handler object per request (undici 7 handler API, `onRequestStart`/`onResponseStart`/...).
 * Measured in `test/bench` at about 1.5x the requests per second of http-proxy-3 with half its
 * CPU per request.
 *
 * Request and response bodies stream with backpressure; `timeout_ms` before the head is a 504 and
 * mid-body cuts the client connection; a client abort aborts the upstream request. undici's header
 * and connect timers tick on a coarse clock, so a 504 or connect 502 fires up to about 1 s after
 * `timeout_ms` / `connect_timeout_ms`, and the time before the response head counts from dispatch.
 *
 * Hoisted listeners find the request's handler on `res` under {@link FORWARD}.
 */
import type { Dispatcher } from "undici";
import type { HeaderMap } from "../facts.js";
import type { RequestTrace } from "../observability/tracing/request-trace.js";
import type { ProxyRequest, ResponseTarget, UpstreamSink } from "./sink.js";
import { upstreamErrorReason } from "./upstream-errors.js";

/** The handler of the request a response belongs to. */
export const FORWARD: unique symbol = Symbol("gateway.forward");
type ForwardedResponse = ResponseTarget & { [FORWARD]?: Forward };

const CLIENT_ABORTED = new Error("client closed the connection");

/** One request's relay from undici's callbacks into `res`. */
export class Forward implements Dispatcher.DispatchHandler {
  controller: Dispatcher.DispatchController | null = null;
  /** The exchange ended (response complete or failed): a later client `close` has nothing to abort. */
  done = false;
  /** The client went away before undici handed over its controller. */
  clientGone = false;

  constructor(
    private readonly upstream: string,
    private readonly sink: UpstreamSink,
    private readonly req: ProxyRequest,
    private readonly res: ResponseTarget,
    /** The request's spans: its CLIENT span ends at the response head or the failure. */
    private readonly trace: RequestTrace | null = null,
  ) {
    (res as ForwardedResponse)[FORWARD] = this;
    res.on("close", onClientClose); // emitted once; `on` skips once()'s wrapper
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.clientGone) controller.abort(CLIENT_ABORTED);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    parsed: Record<string, string | string[] | undefined>,
    statusMessage?: string,
  ): void {
    // 1xx interim responses are not relayed (the transport answers `Expect: 100-continue` itself).
    if (statusCode < 200) return;
    // undici parses into a fresh object per response: ours to edit (repeated fields are arrays).
    this.trace?.upstreamResponded(statusCode);
    this.sink.responseHead(
      this.req,
      this.res,
      statusCode,
      statusMessage ?? "",
      parsed as HeaderMap,
      this.upstream,
    );
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.res.write(chunk)) {
      controller.pause();
      this.res.once("drain", onDrain);
    }
  }

  onResponseEnd(): void {
    this.done = true;
    this.res.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.done = true;
    // The client left (abort, or a broken request body): there is no one to answer.
    const clientLeft = this.clientGone || this.res.destroyed || this.req.socket?.destroyed !== false;
    const reason = upstreamErrorReason(err);
    this.trace?.upstreamFailed(clientLeft ? "aborted" : reason);
    if (clientLeft) return;
    this.sink.upstreamError(this.req, this.res, reason, this.upstream);
  }
}

function onClientClose(this: ForwardedResponse): void {
  const forward = this[FORWARD];
  if (forward === undefined || forward.done || this.writableFinished) return;
  forward.clientGone = true;
  forward.controller?.abort(CLIENT_ABORTED);
}

function onDrain(this: ForwardedResponse): void {
  this[FORWARD]?.controller?.resume();
}
