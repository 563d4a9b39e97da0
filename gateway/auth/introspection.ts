/**
 * RFC 7662 token introspection client (SPEC §5): one keep-alive undici pool per endpoint, HTTP Basic
 * client authentication, a bounded timeout, and every failure turned into
 * {@link IntrospectionUnavailableError} so the token cache can decide between stale and 503.
 */
import { Pool } from "undici";
import { pickClaims, type TokenInfo } from "../base/token-info.js";
import { IntrospectionUnavailableError, type IntrospectionSource } from "./introspection-source.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import type { Milliseconds } from "../base/clock.js";

/** Sockets kept open to the introspection endpoint; further calls queue (inside their timeout). */
const MAX_CONNECTIONS = 64;
/** Largest introspection reply accepted (bytes); a reply is a small JSON object. */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** undici error codes that mean "took too long" rather than "could not talk". */
const TIMEOUT_CODES = new Set(["UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

/** Options of {@link IntrospectionClient}; mirrors `auth.introspection` of the config. */
export interface IntrospectionClientOptions {
  /** The RFC 7662 endpoint (http or https). */
  url: string;
  /** Client id for HTTP Basic client authentication (RFC 6749 §2.3.1). */
  clientId: string;
  /** Client secret; never logged, never in an error message. */
  clientSecret: string;
  /** Bound on one call, connect to last body byte (ms). @default 2000 (ms) in the config */
  timeoutMs: Milliseconds;
  /** Receives `introspectionRequests{result}` and `introspectionDuration` (s). */
  metrics: GatewayMetrics;
  /**
   * Extension members of the response (RFC 7662 §2.2) kept in {@link TokenInfo.claims}: the
   * `rate_limits.plan_claim` name when configured. @default [] (none)
   */
  claimNames?: readonly string[];
}

/**
 * RFC 6749 Appendix B: `application/x-www-form-urlencoded` encoding of one value, which §2.3.1
 * requires for client id and secret before they are joined by `:` and base64-encoded.
 */
function formEncode(value: string): string {
  return new URLSearchParams([["", value]]).toString().slice(1);
}

/**
 * An {@link IntrospectionSource} that asks an RFC 7662 §2.1 endpoint:
 * `POST token=<token>&token_type_hint=access_token` with `Authorization: Basic ...`.
 *
 * @example
 * const client = new IntrospectionClient({ url, clientId: "gateway", clientSecret, timeoutMs: 2000, metrics });
 * const info = await client.introspect(token); // { active: true, clientId: "app", scope: ["read"], exp: ... }
 */
export class IntrospectionClient implements IntrospectionSource {
  readonly kind = "introspection";
  readonly #pool: Pool;
  readonly #path: string;
  readonly #authorization: string;
  readonly #timeoutMs: Milliseconds;
  readonly #metrics: GatewayMetrics;
  readonly #claimNames: readonly string[];

  /** @throws TypeError when `url` is not a valid URL */
  constructor(opts: IntrospectionClientOptions) {
    const url = new URL(opts.url);
    this.#path = `${url.pathname}${url.search}`;
    this.#authorization = `Basic ${Buffer.from(
      `${formEncode(opts.clientId)}:${formEncode(opts.clientSecret)}`,
    ).toString("base64")}`;
    this.#timeoutMs = opts.timeoutMs;
    this.#metrics = opts.metrics;
    this.#claimNames = opts.claimNames ?? [];
    this.#pool = new Pool(url.origin, {
      connections: MAX_CONNECTIONS,
      connect: { timeout: opts.timeoutMs },
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
      maxResponseSize: MAX_RESPONSE_BYTES,
    });
  }

  /**
   * Asks the endpoint about `token` (RFC 7662 §2.1) and maps its reply (§2.2).
   * @param token - the bearer token as sent; it goes only into the request body
   * @returns the answer; `{ active: false, scope: [] }` for an unknown, expired or revoked token
   * @throws IntrospectionUnavailableError with `reason` `timeout` (no full answer within `timeoutMs`),
   *   `network` (connect refused, reset, ...), `status` (not 200, e.g. 401 for wrong client
   *   credentials) or `invalid_response` (not JSON, `active` not a boolean, a field of the wrong type)
   */
  async introspect(token: string): Promise<TokenInfo> {
    const endTimer = this.#metrics.introspectionDuration.startTimer();
    try {
      const info = await this.#call(token);
      this.#metrics.introspectionRequests.inc({ result: info.active ? "active" : "inactive" });
      return info;
    } catch (err) {
      this.#metrics.introspectionRequests.inc({ result: "error" });
      throw err;
    } finally {
      endTimer();
    }
  }

  /** Closes the pooled sockets; later calls fail with reason `network`. */
  async close(): Promise<void> {
    await this.#pool.close();
  }

  async #call(token: string): Promise<TokenInfo> {
    const signal = AbortSignal.timeout(this.#timeoutMs);
    let reply: unknown;
    try {
      const res = await this.#pool.request({
        path: this.#path,
        method: "POST",
        headers: {
          authorization: this.#authorization,
          "content-type": "application/x-www-form-urlencoded",
          accept: "application/json",
        },
        body: new URLSearchParams({ token, token_type_hint: "access_token" }).toString(),
        signal,
      });
      if (res.statusCode !== 200) {
        await res.body.dump();
        throw new IntrospectionUnavailableError(
          "status",
          `introspection endpoint answered HTTP ${res.statusCode}`,
        );
      }
      const text = await res.body.text();
      try {
        reply = JSON.parse(text);
      } catch (err) {
        throw new IntrospectionUnavailableError("invalid_response", "introspection reply is not JSON", {
          cause: err,
        });
      }
    } catch (err) {
      throw this.#classify(err, signal);
    }
    return toTokenInfo(reply, this.#claimNames);
  }

  #classify(err: unknown, signal: AbortSignal): IntrospectionUnavailableError {
    if (err instanceof IntrospectionUnavailableError) return err;
    const code = (err as { code?: unknown } | null)?.code;
    if (signal.aborted || (typeof code === "string" && TIMEOUT_CODES.has(code))) {
      return new IntrospectionUnavailableError(
        "timeout",
        `introspection timed out after ${this.#timeoutMs} ms`,
        { cause: err },
      );
    }
    const what = typeof code === "string" ? code : err instanceof Error ? err.name : "unknown error";
    return new IntrospectionUnavailableError("network", `introspection request failed (${what})`, {
      cause: err,
    });
  }
}

function optionalString(reply: Record<string, unknown>, field: string): string | undefined {
  const v = reply[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw invalid(`"${field}" is not a string`);
  return v;
}

function invalid(what: string): IntrospectionUnavailableError {
  return new IntrospectionUnavailableError("invalid_response", `introspection reply: ${what}`);
}

/**
 * Maps an RFC 7662 §2.2 reply to {@link TokenInfo}. Fields of the wrong type make the whole reply
 * unusable rather than being ignored: a gateway must not trust a token whose `exp` it cannot read.
 * Extension members named in `claimNames` are kept as sent, whatever their type (§2.2 allows any
 * member; the plan resolver ignores and counts a plan claim that is not a plan's name).
 * @param claimNames - members to keep in `claims` (e.g. `["plan"]`)
 * @throws IntrospectionUnavailableError reason `invalid_response`
 */
export function toTokenInfo(reply: unknown, claimNames: readonly string[] = []): TokenInfo {
  if (typeof reply !== "object" || reply === null || Array.isArray(reply)) {
    throw invalid("not a JSON object");
  }
  const r = reply as Record<string, unknown>;
  if (typeof r.active !== "boolean") throw invalid('"active" is not a boolean');
  if (!r.active) return { active: false, scope: [] };
  const exp = r.exp;
  if (exp !== undefined && exp !== null && (typeof exp !== "number" || !Number.isFinite(exp))) {
    throw invalid('"exp" is not a number');
  }
  const scope = optionalString(r, "scope");
  const info: TokenInfo = {
    active: true,
    scope: scope === undefined ? [] : scope.split(" ").filter((s) => s !== ""),
  };
  const sub = optionalString(r, "sub");
  const clientId = optionalString(r, "client_id");
  const username = optionalString(r, "username");
  if (sub !== undefined) info.sub = sub;
  if (clientId !== undefined) info.clientId = clientId;
  if (username !== undefined) info.username = username;
  if (typeof exp === "number") info.exp = exp;
  const claims = pickClaims(r, claimNames);
  if (claims !== undefined) info.claims = claims;
  return info;
}
