/**
 * The `auth` section of the configuration (SPEC §5, §11): JWT access tokens validated locally,
 * beside or instead of one introspection source (RFC 7662 or the static file), each with its cache.
 */
import { z } from "zod";
import { durationMs, httpUrl, lruCapacity, nonNegativeInt, positiveInt, timerSeconds } from "./primitives.js";
import { windowsSchema } from "./windows-schema.js";

/** Authorization schemes `auth.schemes` may list. */
export const AUTH_SCHEMES = ["Bearer", "token"] as const;
/** One of {@link AUTH_SCHEMES}. */
export type AuthScheme = (typeof AUTH_SCHEMES)[number];

/** `auth.introspection.cache` and `auth.static.cache`. */
const cacheSchema = z.strictObject({
  max_entries: lruCapacity.default(100_000).describe("Token cache capacity (entries)."),
  max_ttl_s: positiveInt.default(300).describe("Longest time a positive answer is trusted (s)."),
  negative_ttl_s: nonNegativeInt.default(10).describe("Time an inactive/unknown answer is cached (s)."),
  stale_if_error_s: nonNegativeInt
    .default(60)
    .describe("How long past its TTL a positive entry may serve while the source fails (s)."),
});

const introspectionSchema = z.strictObject({
  url: httpUrl.describe("RFC 7662 introspection endpoint."),
  client_id: z.string().min(1).describe("Client id for HTTP Basic client authentication."),
  client_secret: z.string().min(1).describe("Client secret; use ${ENV_VAR} interpolation."),
  timeout_ms: durationMs.default(2_000).describe("Introspection call timeout (ms)."),
  cache: cacheSchema.prefault({}),
});

const staticSchema = z.strictObject({
  tokens_file: z
    .string()
    .min(1)
    .describe(
      "YAML mapping of token (or sha256:<hex>) to introspection fields; relative to the config file.",
    ),
  cache: cacheSchema.prefault({}),
});

/** Asymmetric JWS algorithms (RFC 7518 §3.3-3.5, RFC 8037); `none` and HMAC are never accepted. */
const JWS_ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519",
] as const;

/** `auth.jwt.cache`: like the introspection cache, without `stale_if_error_s` (no source to fail). */
const jwtCacheSchema = cacheSchema.omit({ stale_if_error_s: true });

/** `auth.jwt` (SPEC §11): JWT access tokens (RFC 9068) validated locally against the issuer's JWKS. */
const jwtSchema = z.strictObject({
  issuer: httpUrl.describe(
    "`iss` must equal it (RFC 9068 §4); discovery is `<issuer>/.well-known/openid-configuration`.",
  ),
  audience: z
    .array(z.string().min(1))
    .min(1, { error: "expected at least one audience" })
    .describe("`aud` must contain one of these (RFC 9068 §4)."),
  jwks_url: httpUrl.optional().describe("JWKS endpoint; the discovery document's `jwks_uri` when absent."),
  algorithms: z
    .array(
      z.enum(JWS_ALGORITHMS, {
        error: `expected an asymmetric JWS algorithm (${JWS_ALGORITHMS.join(", ")}); none and HS* are refused`,
      }),
    )
    .min(1, { error: "expected at least one algorithm" })
    .default(["RS256", "PS256", "ES256", "EdDSA"])
    .describe("Accepted `alg` values (RFC 8725 §3.1)."),
  typ: z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .describe("Accepted `typ` header values (e.g. `at+jwt`, RFC 9068 §2.1); not checked when absent."),
  leeway_s: nonNegativeInt.default(30).describe("Clock skew allowed on `exp`, `nbf` and `iat` (s)."),
  timeout_ms: durationMs.default(2_000).describe("Bound on one JWKS or discovery fetch (ms)."),
  jwks_refresh_s: timerSeconds
    .default(300)
    .describe("Background refresh period of the key set (s); after a failed fetch, at most 30 s."),
  cache: jwtCacheSchema.prefault({}),
});

/** `auth`: JWT validation and/or one introspection source (SPEC §5, §11). */
export const authSchema = z
  .strictObject({
    realm: z.string().min(1).default("api").describe("Realm in WWW-Authenticate challenges."),
    schemes: z
      .array(z.enum(AUTH_SCHEMES))
      .min(1)
      .default(["Bearer"])
      .describe(
        "Authorization schemes accepted, case-insensitively: `Bearer` (RFC 6750), and `token` for GitHub-style clients (Octokit sends `Authorization: token X`).",
      ),
    jwt: jwtSchema.optional(),
    introspection: introspectionSchema.optional(),
    static: staticSchema.optional(),
    forward_authorization: z
      .boolean()
      .default(true)
      .describe("Forward the client's Authorization header to the upstream unchanged."),
    guard: z
      .strictObject({
        windows: windowsSchema
          .optional()
          .describe(
            "Per client IP: tokens that failed to resolve allowed per window before uncached tokens are refused; `rate_limits.anonymous.windows` when absent.",
          ),
      })
      .prefault({})
      .describe("The brute-force guard on tokens no cache knows (SPEC §3)."),
  })
  .superRefine((auth, ctx) => {
    const message = authSourceProblem(auth);
    if (message !== undefined) ctx.addIssue({ code: "custom", message, input: Object.keys(auth) });
  });

/**
 * `auth`'s own cross-field check, on the raw mapping too (`cross-checks.ts`): one token source,
 * or `jwt` beside one.
 * @returns the message, or undefined when the sources combine
 */
export function authSourceProblem(auth: {
  jwt?: unknown;
  introspection?: unknown;
  static?: unknown;
}): string | undefined {
  const sources = (auth.introspection === undefined ? 0 : 1) + (auth.static === undefined ? 0 : 1);
  if (sources === 1 || (sources === 0 && auth.jwt !== undefined)) return undefined;
  return sources === 0
    ? "expected a token source: `jwt` (JWT access tokens), `introspection` (an RFC 7662 endpoint) or `static` (a tokens file)"
    : "expected one of `jwt`, `introspection` or `static`, or `jwt` beside one of the other two";
}

/** `auth.guard` (SPEC §3). */
export type GuardConfig = z.output<typeof authSchema>["guard"];
/** Token cache settings of an introspection source. */
export type TokenCacheConfig = z.output<typeof cacheSchema>;
/** `auth.jwt` (SPEC §11), defaults applied. */
export type JwtConfig = z.output<typeof jwtSchema>;
