/**
 * The facts of a request as the transport that received it reports them: plain data, the only
 * input of the request core (`pipeline.ts`). An HTTP/1.1 writer builds them from `node:http`, an
 * HTTP/2 writer from `node:http2` pseudo-headers.
 */

/** Protocol of the client connection, as the access line's `protocol` shows it. */
export type ClientProtocol = "1.0" | "1.1" | "2";

/** Header fields by lower-case name (repeated fields as arrays), as Node and undici parse them. */
export type HeaderMap = Record<string, string | string[] | undefined>;

/** One request's facts. */
export interface RequestFacts {
  /** Upper-case method. */
  method: string;
  /** The request-target as sent (origin-form expected). */
  target: string;
  /**
   * The request's header fields. The core edits them in place into the upstream request's headers
   * (hop-by-hop removed, forwarded and identity fields set), so the transport must own this object.
   */
  headers: HeaderMap;
  /** The socket's peer address. */
  peerAddress: string;
  protocol: ClientProtocol;
  /** The client connection is TLS (`X-Forwarded-Proto: https`). */
  secure: boolean;
  /**
   * RFC 4514 subject of the client certificate verified by mutual TLS (`listen.tls.client_ca_file`),
   * sent upstream as `X-Client-Cert-Subject`; null otherwise.
   */
  clientCertSubject: string | null;
  /** A WebSocket handshake taken by the `upgrade` listener (keeps `Connection: Upgrade`). */
  upgrade: boolean;
  /** Number of `Host` fields (HTTP/1.x; RFC 9112 §3.2 wants exactly one on HTTP/1.1). */
  hostFields: number;
}
