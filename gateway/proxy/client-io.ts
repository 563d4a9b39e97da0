/**
 * What an exchange needs of the transport that received the request, as structural types: the
 * proxy never imports `node:http` or `node:http2` server types, so both writers' request and
 * response objects fit.
 */
import type { Readable } from "node:stream";

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
