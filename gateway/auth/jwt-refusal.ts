/**
 * Why a JWT access token was refused, as fields of a `debug` line (a wrong audience or
 * issuer must be findable in the log): the check that failed (`aud`, `iss`, `exp`, `nbf`, `iat`,
 * `typ`, `signature`, `kid`, `alg`, ...), what was expected and what the token's claim or header
 * said. Never a token byte: only the decoded values of the claim or header member that failed
 * (issuer, audience, times, `kid`, `alg`), which are no credential. Built only while `debug` is on.
 */
import { decodeProtectedHeader, errors } from "jose";
import type { JwtConfig } from "../config/schema.js";
import { KeySetUnavailableError } from "./jwks.js";

/** The fields of a refusal line. */
export interface JwtRefusal {
  /** The check that failed. */
  reason: string;
  /** What the check said, in words. */
  detail: string;
  /** The configured or computed value the token was checked against. */
  expected?: unknown;
  /** The token's value of the claim or header member that failed. */
  received?: unknown;
  /** The JWS header's `kid` and `alg` (RFC 7515 §4.1), when readable. */
  kid?: string;
  alg?: string;
}

/** A refusal decided by the gateway's own checks, after jose accepted the token. */
export class JwtCheckFailed extends Error {
  constructor(
    readonly claim: string,
    message: string,
    readonly received?: unknown,
  ) {
    super(message);
    this.name = "JwtCheckFailed";
  }
}

function header(token: string): { kid?: string; alg?: string } {
  try {
    const h = decodeProtectedHeader(token);
    return {
      ...(typeof h.kid === "string" ? { kid: h.kid } : {}),
      ...(typeof h.alg === "string" ? { alg: h.alg } : {}),
    };
  } catch {
    return {};
  }
}

/**
 * @param cause - what the validation threw (jose's errors, the key set's, {@link JwtCheckFailed})
 * @param token - the refused token: only its header's `kid`/`alg` and the failing claim are read
 * @param config - `auth.jwt`, for the expected issuer, audience and algorithms
 * @param issuer - the issuer tokens are checked against (the discovery document's, SPEC §11)
 * @param nowS - the validation's clock (s), for time claims
 */
export function describeRefusal(
  cause: unknown,
  token: string,
  config: JwtConfig,
  issuer: string,
  nowS: number,
): JwtRefusal {
  const h = header(token);
  if (cause instanceof KeySetUnavailableError)
    return { reason: "kid", detail: "key not held and the key set cannot be fetched", ...h };
  if (cause instanceof errors.JWKSNoMatchingKey)
    return { reason: "kid", detail: "no key of the issuer's key set has this kid and alg", ...h };
  if (cause instanceof errors.JOSEAlgNotAllowed || cause instanceof errors.JOSENotSupported)
    return { reason: "alg", detail: cause.message, expected: config.algorithms, received: h.alg, ...h };
  if (cause instanceof errors.JWSSignatureVerificationFailed)
    return { reason: "signature", detail: "signature does not verify with the issuer's key", ...h };
  if (cause instanceof errors.JWTClaimValidationFailed || cause instanceof errors.JWTExpired) {
    const claim = cause.claim;
    const received = cause.payload[claim];
    const expected =
      claim === "iss"
        ? issuer
        : claim === "aud"
          ? config.audience
          : ["exp", "nbf", "iat"].includes(claim)
            ? { nowS, leewayS: config.leeway_s }
            : undefined;
    return { reason: claim, detail: cause.message, expected, received, ...h };
  }
  if (cause instanceof JwtCheckFailed) {
    return { reason: cause.claim, detail: cause.message, received: cause.received, ...h };
  }
  if (cause instanceof errors.JWKInvalid || cause instanceof errors.JWKSInvalid || cause instanceof TypeError)
    return { reason: "kid", detail: "the key for this kid cannot be used", ...h };
  return { reason: "malformed", detail: "not a parseable JWS or JWT claims set", ...h };
}
