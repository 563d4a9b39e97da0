/**
 * The plain data of a proxied exchange (`plain-exchange.ts`, `exchange-upgrade.ts`, run by
 * `upstream-call.ts`): what a plain exchange sends, how an exchange ended, and the seams it calls
 * synchronously: the core's hooks, and the transport's writers (a relayed head; a handshake that
 * failed before any answer).
 */
import type { Socket } from "node:net";
import type { Readable } from "node:stream";
import type { HeaderMap } from "../base/request-facts.js";
import type { UpstreamErrorReason } from "../base/results.js";
import type { ProxyRequest } from "./client-io.js";
import type { Endpoint } from "./endpoint.js";
import type { RetryPolicy } from "../config/retry-policy.js";

/**
 * How one exchange ended: plain data for the core.
 * @typeParam C - the core's per-request context (its request scope)
 */
export interface ExchangeResult<C> {
  /** The core's context the exchange was started with (its request scope). */
  readonly context: C;
  /** The endpoint that was called. */
  readonly endpoint: Endpoint;
  /** The upstream's status (101 for a switched handshake), or 0 when it never answered. */
  readonly status: number;
  /** Why the upstream failed (connect, timeout, reset), or null when its answer was relayed. */
  readonly failure: UpstreamErrorReason | null;
  /** The response head reached the client (a failure can then only cut the stream). */
  readonly responseStarted: boolean;
  /** The client went away first: nothing is left to answer. */
  readonly clientLeft: boolean;
  /** Tries made (1 without retries; 0 when the client left before the first). */
  readonly attempts: number;
  /** The request body grew past its limit (SPEC §17): 413, or a cut connection. */
  readonly bodyTooLarge: boolean;
}

/**
 * The core's part of an exchange, called synchronously at the moments that cannot wait for the
 * result: an attempt's start and the response head's arrival.
 * @typeParam C - the core's per-request context (its request scope)
 */
export interface ExchangeHooks<C> {
  /** An attempt goes to `endpoint` (the access line names it even if the client leaves). */
  attemptStarted(context: C, endpoint: Endpoint): void;
  /**
   * Time the head, drop its hop-by-hop fields, write the gateway's fields over the upstream's.
   * @param canWait - true for a plain exchange, which can hold the head (and the body) back
   * @returns null: relay the head now; a promise (only when `canWait`): relay it, and the body
   *   after it, once it settles (the charge of an answer, SPEC §22, is counted first so the head
   *   carries it)
   */
  upstreamHead(
    context: C,
    headers: HeaderMap,
    endpoint: Endpoint,
    upgraded: boolean,
    canWait: boolean,
  ): Promise<void> | null;
}

/** The transport's part of a WebSocket handshake. */
export interface HandshakeWriter<C> {
  /**
   * The handshake failed before any answer: answer on the client socket now, which still speaks
   * HTTP (http-proxy-3 ends it right after reporting the error, so this cannot wait).
   */
  handshakeFailed(socket: Socket, result: ExchangeResult<C>): void;
}

/** The transport's part: writes a decorated upstream head on its response object. */
export interface HeadWriter<R> {
  /** @param message - the upstream's reason phrase ("" when none; HTTP/2 has none) */
  writeHead(res: R, status: number, message: string, headers: HeaderMap): void;
}

/** What a plain exchange sends. */
export interface PlainRequest {
  readonly method: string;
  /** Path and query, appended to the endpoint's base path. */
  readonly path: string;
  /** The prepared upstream request headers (hop-by-hop and `expect` removed). */
  readonly headers: HeaderMap;
  /** The client's request (its connection tells a client that left from an upstream failure). */
  readonly body: ProxyRequest;
  /**
   * What streams upstream as the body: the client's request, a stream in front of it that cuts a
   * body past its limit (failing with {@link BODY_TOO_LARGE}), or null without a body.
   */
  readonly upload: Readable | null;
  /** The balancer's hash key (`consistent_hash`), else undefined. */
  readonly hashKey: string | undefined;
  /** The body received whole and kept for replay (SPEC §17), or null: `body` streams. */
  readonly replay: Buffer | null;
  /** The route's retries when this call may be retried (idempotent, replayable), else null. */
  readonly retry: RetryPolicy | null;
  /** The route's `timeout_ms` over every try and backoff until a response head, or 0. */
  readonly timeoutMs: number;
}
