/** The seam of every token source (SPEC §5): the RFC 7662 endpoint and the static tokens file. */
import type { TokenInfo } from "../base/token-info.js";

/** An introspection source answers for one token or fails. */
export interface IntrospectionSource {
  /** Names the source in log lines: an RFC 7662 endpoint or a static tokens file. */
  readonly kind: "introspection" | "static";
  /**
   * @param token - the bearer token as sent (never logged)
   * @returns the source's answer; an unknown token is `{ active: false }`
   * @throws IntrospectionUnavailableError when the source cannot answer (network, timeout, 5xx,
   *   unparsable reply)
   */
  introspect(token: string): Promise<TokenInfo>;
  /** Releases sockets and timers. */
  close?(): Promise<void>;
}

/** The source could not give an answer; the token cache may serve a stale entry instead. */
export class IntrospectionUnavailableError extends Error {
  /** Short reason for logs and metrics: `timeout`, `network`, `status`, `invalid_response`. */
  readonly reason: string;
  constructor(reason: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "IntrospectionUnavailableError";
    this.reason = reason;
  }
}
