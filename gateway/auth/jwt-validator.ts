/**
 * Local validation of one JWT access token (SPEC §11, RFC 9068 §4) with jose: the JWS signature
 * (RFC 7515 §5.2) by a key of the issuer's set, an allowed `alg` (RFC 8725 §3.1: never `none`, never
 * an HMAC), `iss`, `aud`, a required `exp`, `nbf` and `iat` (RFC 7519 §4.1) within `leeway_s`, and
 * `typ` (RFC 8725 §3.11) when configured. Every failure becomes one result of
 * `gateway_jwt_validations_total`; nothing throws.
 */
import { errors, jwtVerify, type JWTPayload, type JWTVerifyOptions, type JWTVerifyResult } from "jose";
import type { Clock } from "../base/clock.js";
import type { JwtConfig } from "../config/schema.js";
import type { JwtValidationResult } from "../base/results.js";
import type { RequestTrace } from "../observability/tracing/request-trace.js";
import { KeySetUnavailableError, type KeySet } from "./jwks.js";
import { JwtCheckFailed } from "./jwt-refusal.js";
import { pickClaims, type TokenInfo } from "../base/token-info.js";

/** What one validation (RFC 9068 §4) concluded: token information, or the reason it is refused. */
export type JwtVerdict =
  | { result: "valid"; info: TokenInfo }
  /** `cause`: what failed, for {@link describeRefusal} (a debug line). */
  | { result: Exclude<JwtValidationResult, "valid">; cause: unknown };

/** RFC 8725 §3.11 / RFC 9068 §2.1: `at+jwt` and `application/at+jwt` are the same media type. */
function normalizeTyp(typ: string): string {
  const t = typ.toLowerCase();
  return t.startsWith("application/") ? t.slice("application/".length) : t;
}

/** Validates JWT access tokens of one issuer (RFC 9068 §4, RFC 7519 §7.2, RFC 8725 §3). */
export class JwtValidator {
  readonly #options: JWTVerifyOptions;
  readonly #keys: KeySet;
  readonly #clock: Clock;
  readonly #leewayS: number;
  readonly #typ: ReadonlySet<string> | undefined;
  readonly #claimNames: readonly string[];

  /**
   * @param keys - the issuer's key set, whose `resolve` picks the key of each token
   * @param claimNames - claims kept in `TokenInfo.claims` (the plan claim)
   */
  constructor(config: JwtConfig, keys: KeySet, clock: Clock, claimNames: readonly string[] = []) {
    this.#claimNames = claimNames;
    this.#keys = keys;
    this.#clock = clock;
    this.#leewayS = config.leeway_s;
    this.#typ = config.typ === undefined ? undefined : new Set(config.typ.map(normalizeTyp));
    this.#options = {
      issuer: config.issuer,
      audience: [...config.audience],
      algorithms: [...config.algorithms],
      clockTolerance: config.leeway_s,
      requiredClaims: ["exp"],
    };
  }

  /**
   * @param token - a bearer token (JWS-shaped or not: anything else is `malformed`)
   * @param trace - the spans of the request validating it, for a key-set fetch it waits for
   *   ({@link KeySet.resolve})
   * @returns the token's information, or the reason it is refused; never rejects
   */
  async validate(token: string, trace: RequestTrace | null = null): Promise<JwtVerdict> {
    const nowMs = this.#clock.nowMs();
    // The issuer as the discovery document spells it (a trailing slash apart, SPEC §11).
    const options: JWTVerifyOptions = {
      ...this.#options,
      issuer: this.#keys.issuer,
      currentDate: new Date(nowMs),
    };
    let verified: JWTVerifyResult;
    try {
      verified = await this.#verify(token, options, trace);
    } catch (err) {
      return { result: classify(err), cause: err };
    }
    const { payload, protectedHeader } = verified;
    // jose checks `iat` only against a maximum age; SPEC §11 refuses one from the future like `nbf`.
    if (typeof payload.iat === "number" && payload.iat > nowMs / 1000 + this.#leewayS)
      return { result: "claims", cause: new JwtCheckFailed("iat", '"iat" is in the future', payload.iat) };
    if (this.#typ !== undefined) {
      const typ = protectedHeader.typ;
      if (typeof typ !== "string" || !this.#typ.has(normalizeTyp(typ)))
        return { result: "claims", cause: new JwtCheckFailed("typ", "header typ not accepted", typ) };
    }
    const info = tokenInfoOf(payload, this.#claimNames);
    if (info !== undefined) return { result: "valid", info };
    const detail = "sub, client_id, scope or scp has the wrong type";
    return { result: "claims", cause: new JwtCheckFailed("claims", detail, null) };
  }

  async #verify(
    token: string,
    options: JWTVerifyOptions,
    trace: RequestTrace | null,
  ): Promise<JWTVerifyResult> {
    const keys = this.#keys;
    // jose calls the key getter with the header and token only; a closure carries the trace.
    const getKey: typeof keys.resolve =
      trace === null ? keys.resolve : (header, jws) => keys.resolve(header, jws, trace);
    try {
      return await jwtVerify(token, getKey, options);
    } catch (err) {
      if (!(err instanceof errors.JWKSMultipleMatchingKeys)) throw err;
      // No `kid` to choose among several keys (RFC 7515 §4.1.4 makes it optional): try each.
      for await (const key of err) {
        try {
          return await jwtVerify(token, key, options);
        } catch (inner) {
          if (!(inner instanceof errors.JWSSignatureVerificationFailed)) throw inner;
        }
      }
      throw new errors.JWSSignatureVerificationFailed();
    }
  }
}

/** A jose error (or the key set's) as a validation result (SPEC §11). */
function classify(err: unknown): Exclude<JwtValidationResult, "valid"> {
  if (err instanceof KeySetUnavailableError) return "unavailable";
  if (err instanceof errors.JWKSNoMatchingKey) return "unknown_key";
  if (err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported) return "algorithm";
  if (err instanceof errors.JWSSignatureVerificationFailed) return "bad_signature";
  if (err instanceof errors.JWTExpired) return "expired";
  if (err instanceof errors.JWTClaimValidationFailed) return "claims";
  // A listed key that cannot be imported (or is too weak) verifies nothing.
  if (err instanceof errors.JWKInvalid || err instanceof errors.JWKSInvalid || err instanceof TypeError) {
    return "unknown_key";
  }
  return "malformed"; // JWSInvalid, JWTInvalid: not a parseable JWS or claims set
}

function optionalString(v: unknown): string | undefined | null {
  return v === undefined ? undefined : typeof v === "string" ? v : null;
}

/**
 * RFC 9068 §2.2 claims as the gateway's token information: `sub`, `client_id`, `scope` (a
 * space-separated string, RFC 8693 §4.2) or `scp` (an array of strings), `exp`, and the claims
 * named in configuration (`claims`: the `rate_limits.plan_claim`, SPEC §10), as every source keeps
 * them ({@link pickClaims}).
 * @param claimNames - the claims the configuration reads
 * @returns undefined when a mapped claim has the wrong type (refused as `claims`)
 */
export function tokenInfoOf(payload: JWTPayload, claimNames: readonly string[] = []): TokenInfo | undefined {
  const sub = optionalString(payload.sub);
  const clientId = optionalString(payload.client_id);
  if (sub === null || clientId === null || typeof payload.exp !== "number") return undefined;
  let scope: string[];
  if (payload.scope !== undefined) {
    if (typeof payload.scope !== "string") return undefined;
    scope = payload.scope.split(" ").filter((s) => s !== "");
  } else if (payload.scp !== undefined) {
    const scp = payload.scp;
    if (!Array.isArray(scp) || !scp.every((s): s is string => typeof s === "string")) return undefined;
    scope = scp.filter((s) => s !== "");
  } else {
    scope = [];
  }
  const info: TokenInfo = { active: true, scope, exp: payload.exp };
  if (sub !== undefined) info.sub = sub;
  if (clientId !== undefined) info.clientId = clientId;
  const claims = pickClaims(payload, claimNames);
  if (claims !== undefined) info.claims = claims;
  return info;
}
