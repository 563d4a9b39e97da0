/**
 * The verified client certificate of a mutual-TLS connection (SPEC §12), as the RFC 4514 string
 * the upstream receives in `X-Client-Cert-Subject`.
 */
import type { TLSSocket } from "node:tls";

const SUBJECT: unique symbol = Symbol("gateway.clientCertSubject");
type Remembered = TLSSocket & { [SUBJECT]?: string | null };

/**
 * @returns the RFC 4514 distinguished name of the verified peer certificate (most specific RDN
 *   first: `CN=client,O=Example`), or null when the connection has no verified client certificate.
 *   Computed once per connection.
 */
export function clientCertSubject(socket: TLSSocket): string | null {
  const s = socket as Remembered;
  if (s[SUBJECT] !== undefined) return s[SUBJECT];
  let subject: string | null = null;
  if (s.authorized) {
    const cert = s.getPeerX509Certificate?.();
    // X509Certificate.subject is one "key=value" per line, least specific first (OpenSSL order).
    if (cert !== undefined) subject = cert.subject.split("\n").reverse().map(escapeRdn).join(",");
  }
  s[SUBJECT] = subject;
  return subject;
}

/** RFC 4514 §2.4 escaping of an attribute value (`,`, `+`, `"`, `\`, `<`, `>`, `;`, and edges). */
function escapeRdn(pair: string): string {
  const i = pair.indexOf("=");
  const value = pair
    .slice(i + 1)
    .replace(/[,+"\\<>;]/g, "\\$&")
    .replace(/^[ #]/, "\\$&")
    .replace(/ $/, "\\ ");
  return `${pair.slice(0, i)}=${value}`;
}
