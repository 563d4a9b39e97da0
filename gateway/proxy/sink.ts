/**
 * What the upstream client needs of the transport that received the request, as structural types:
 * the client never imports `node:http` or `node:http2` server types, so an HTTP/2 writer plugs in
 * by implementing {@link UpstreamSink} over its own request and response objects.
 */
import type { Readable } from "node:stream";
import type { HeaderMap } from "../facts.js";
import type { UpstreamErrorReason } from "../observability/metrics.js";

/** The client's request as the upstream client reads it: its body. */
export interface ProxyRequest extends Readable {
  /** The client connection, to tell a client that left from an upstream failure. */
  readonly socket: { readonly destroyed: boolean } | null;
}

/** The client's response as the upstream client writes it (a subset of `ServerResponse`). */
export interface ResponseTarget {
  readonly headersSent: boolean;
  readonly destroyed: boolean;
  readonly writableFinished: boolean;
  write(chunk: Buffer): boolean;
  end(): unknown;
  destroy(): unknown;
  on(event: "close", listener: () => void): unknown;
  once(event: "drain", listener: () => void): unknown;
}

/**
 * Callbacks into the transport, the one place that turns upstream events into client responses.
 * One object per transport, which finds the request's own state on `req`/`res`.
 */
export interface UpstreamSink {
  /**
   * The upstream's response head (status >= 200) arrived: time it, drop its hop-by-hop fields, add
   * the gateway's headers, and write the head to `res` as the transport does.
   * @param message - the upstream's reason phrase ("" when none; HTTP/2 has none)
   * @param headers - the upstream's fields, the writer's to edit
   */
  responseHead(
    req: ProxyRequest,
    res: ResponseTarget,
    status: number,
    message: string,
    headers: HeaderMap,
    upstream: string,
  ): void;
  /** The upstream failed before a response started (`res` still writable) or after (it is not). */
  upstreamError(req: ProxyRequest, res: ResponseTarget, reason: UpstreamErrorReason, upstream: string): void;
}
