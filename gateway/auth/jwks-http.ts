/**
 * The two documents local JWT validation needs from the issuer (SPEC §11): its OpenID Connect
 * discovery document (OpenID Connect Discovery 1.0 §4, for `jwks_uri`) and its JSON Web Key Set
 * (RFC 7517 §5). Plain GETs on one undici agent with a bounded time and size; redirects are not
 * followed (as jose's own remote key set does not).
 */
import { Agent } from "undici";
import type { Milliseconds } from "../base/clock.js";

/** Largest discovery document or key set accepted (bytes). */
const MAX_RESPONSE_BYTES = 1024 * 1024;

/**
 * A discovery (OpenID Connect Discovery 1.0 §4) or JWKS (RFC 7517 §5) fetch that did not give a
 * usable document; `message` names what, never a secret.
 */
export class KeySetFetchError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "KeySetFetchError";
  }
}

/** GETs the issuer's JSON documents: its discovery document and its JWK set (RFC 7517 §5). */
export class IssuerDocuments {
  readonly #agent: Agent;
  readonly #timeoutMs: Milliseconds;

  /** @param timeoutMs - bound on one fetch, connect to last body byte (`auth.jwt.timeout_ms`) */
  constructor(timeoutMs: Milliseconds) {
    this.#timeoutMs = timeoutMs;
    this.#agent = new Agent({
      connect: { timeout: timeoutMs },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      maxResponseSize: MAX_RESPONSE_BYTES,
    });
  }

  /**
   * The `jwks_uri` of the issuer's discovery document, checked to name `issuer` (Discovery §4.3),
   * and the issuer as the document spells it: `https://idp/` and `https://idp` are taken as one
   * issuer when the document names the other (a trailing slash in `auth.jwt.issuer` made
   * every JWT a 503), and tokens are then checked against the document's spelling, which is what
   * the issuer puts in `iss` (Discovery §3: they are identical).
   * @throws KeySetFetchError naming both issuers when they differ otherwise
   */
  async discover(issuer: string): Promise<{ jwksUri: string; issuer: string }> {
    const url = `${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
    const doc = await this.getJson(url, "discovery document");
    if (typeof doc !== "object" || doc === null)
      throw new KeySetFetchError("discovery document is not an object");
    const { issuer: named, jwks_uri: jwksUri } = doc as Record<string, unknown>;
    if (typeof named !== "string" || named.replace(/\/$/, "") !== issuer.replace(/\/$/, "")) {
      throw new KeySetFetchError(
        `discovery document ${url} names issuer ${JSON.stringify(named)}, auth.jwt.issuer is ` +
          `${JSON.stringify(issuer)}: set auth.jwt.issuer to the document's (tokens carry it in iss)`,
      );
    }
    if (
      typeof jwksUri !== "string" ||
      !URL.canParse(jwksUri) ||
      !/^https?:$/.test(new URL(jwksUri).protocol)
    ) {
      throw new KeySetFetchError("discovery document has no http(s) jwks_uri");
    }
    return { jwksUri, issuer: named };
  }

  /**
   * GETs `url` and parses its body as JSON.
   * @param what - names the document in errors
   * @throws KeySetFetchError on a timeout, a network error, a status other than 200 or a body that
   *   is not JSON
   */
  async getJson(url: string, what: string): Promise<unknown> {
    const u = new URL(url);
    let text: string;
    try {
      const res = await this.#agent.request({
        origin: u.origin,
        path: `${u.pathname}${u.search}`,
        method: "GET",
        headers: { accept: "application/json, application/jwk-set+json" },
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      if (res.statusCode !== 200) {
        await res.body.dump();
        throw new KeySetFetchError(`${what} answered HTTP ${res.statusCode}`);
      }
      text = await res.body.text();
    } catch (err) {
      if (err instanceof KeySetFetchError) throw err;
      const code = (err as { code?: unknown } | null)?.code;
      const why = typeof code === "string" ? code : err instanceof Error ? err.name : "error";
      throw new KeySetFetchError(`${what} fetch failed (${why})`, { cause: err });
    }
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      throw new KeySetFetchError(`${what} is not JSON`, { cause: err });
    }
  }

  /** Closes the agent's sockets. */
  async close(): Promise<void> {
    await this.#agent.close();
  }
}
