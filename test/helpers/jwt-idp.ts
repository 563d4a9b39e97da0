/**
 * A real identity provider issuing JWT access tokens (RFC 9068) for tests: oidc-provider 9
 * in-process on 127.0.0.1, configured as test/helpers/oidc.ts does, plus resource indicators
 * (RFC 8707) whose resource server gets `accessTokenFormat: 'jwt'`, and signing keys the test
 * chooses. It serves discovery and its JWKS, still introspects the opaque tokens it issues without a
 * resource, counts the requests reaching its JWKS and introspection endpoints, and rotates its keys
 * without changing port, issuer or clients. Tokens it cannot produce (`alg: none`, HMAC, forged,
 * expired) are crafted with jose ({@link signJwt}).
 */
import http from "node:http";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from "jose";
import { GATEWAY_CLIENT_ID, GATEWAY_CLIENT_SECRET, Provider, providerConfiguration } from "./oidc.js";
import { freePort } from "./redis-server.js";

/** The resource (RFC 8707) the test IdP issues JWTs for: the `aud` the gateway expects. */
export const AUDIENCE = "https://api.example.test";

/** A signing key pair with its JWKs. */
export interface SigningKey {
  kid: string;
  alg: string;
  /** Private JWK with `kid`, `alg`, `use` (the provider's keystore entry). */
  privateJwk: JWK;
  /** What the JWKS endpoint publishes. */
  publicJwk: JWK;
  privateKey: CryptoKey;
}

/** Generates a key pair (RFC 7518 / RFC 8037 algorithm `alg`). */
export async function signingKey(kid: string, alg = "ES256"): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const meta = { kid, alg, use: "sig" };
  return {
    kid,
    alg,
    privateKey,
    privateJwk: { ...(await exportJWK(privateKey)), ...meta },
    publicJwk: { ...(await exportJWK(publicKey)), ...meta },
  };
}

/**
 * Signs a JWT with `key` (jose's SignJWT): for tokens the IdP will not issue.
 * @param header - protected header fields over `{ alg, kid, typ: "at+jwt" }`
 */
export function signJwt(
  key: SigningKey,
  claims: JWTPayload,
  header: Record<string, unknown> = {},
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: "at+jwt", ...header })
    .sign(key.privateKey);
}

/**
 * oidc-provider configuration of an IdP issuing JWT access tokens: {@link providerConfiguration}
 * (clients `app` and `gateway`, introspection) plus `keys` as its JWKS (the first signs) and a
 * resource server {@link AUDIENCE} whose access tokens are JWTs (RFC 9068, `typ: at+jwt`).
 * @param adapter - an oidc-provider adapter class; default its in-memory LRU
 */
export function jwtProviderConfiguration(
  keys: readonly SigningKey[],
  tokenTtlS: number,
  gatewaySecret = GATEWAY_CLIENT_SECRET,
  adapter?: unknown,
): Record<string, unknown> {
  const signer = keys[0]!;
  const base = providerConfiguration(gatewaySecret, tokenTtlS, adapter);
  return {
    ...base,
    jwks: { keys: keys.map((k) => k.privateJwk) },
    clientDefaults: { id_token_signed_response_alg: signer.alg },
    features: {
      ...(base.features as Record<string, unknown>),
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: "read write",
          audience: AUDIENCE,
          accessTokenFormat: "jwt",
          accessTokenTTL: tokenTtlS,
          jwt: { sign: { alg: signer.alg, kid: signer.kid } },
        }),
      },
    },
  };
}

/** A running IdP. */
export interface JwtIdp {
  readonly issuer: string;
  readonly jwksUrl: string;
  readonly introspectionUrl: string;
  /** A JWT access token for {@link AUDIENCE}, signed by the first key (client_credentials). */
  issueJwt(scope: string): Promise<string>;
  /** An opaque access token (no resource), for introspection. */
  issueOpaque(scope: string): Promise<string>;
  /** Publishes `keys` from now on and signs with the first: a rotation, without a restart. */
  setKeys(keys: readonly SigningKey[]): void;
  /** Requests that reached the JWKS endpoint. */
  jwksRequests(): number;
  /** Requests that reached the introspection endpoint. */
  introspections(): number;
  /** Closes the listener and every connection (the gateway sees connection refused). */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
}

/**
 * Starts the IdP on a free port.
 * @param keys - published in this order; the first signs
 * @param tokenTtlS - lifetime of issued access tokens (s)
 */
export async function startJwtIdp(keys: readonly SigningKey[], tokenTtlS = 600): Promise<JwtIdp> {
  let jwks = 0;
  let introspections = 0;
  let handle: http.RequestListener = () => {};
  const server = http.createServer((req, res) => {
    if (req.url === "/jwks") jwks += 1;
    if (req.url === "/token/introspection") introspections += 1;
    handle(req, res);
  });
  // A port of the test range (not an ephemeral one): `start()` after `stop()` binds it again.
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${port}`;
  const provide = (ks: readonly SigningKey[]): void => {
    handle = new Provider(issuer, jwtProviderConfiguration(ks, tokenTtlS)).callback();
  };
  provide(keys);
  const appBasic = `Basic ${Buffer.from("app:app-secret").toString("base64")}`;
  const issue = async (form: Record<string, string>): Promise<string> => {
    const res = await fetch(`${issuer}/token`, {
      method: "POST",
      headers: { authorization: appBasic, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "client_credentials", ...form }).toString(),
    });
    const body = (await res.json()) as { access_token?: string };
    if (res.status !== 200 || body.access_token === undefined) throw new Error(JSON.stringify(body));
    return body.access_token;
  };
  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    introspectionUrl: `${issuer}/token/introspection`,
    issueJwt: (scope) => issue({ scope, resource: AUDIENCE }),
    issueOpaque: (scope) => issue({ scope }),
    setKeys: provide,
    jwksRequests: () => jwks,
    introspections: () => introspections,
    async stop() {
      if (!server.listening) return;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
    async start() {
      if (server.listening) return;
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, "127.0.0.1", () => {
          server.off("error", reject);
          resolve();
        });
      });
    },
  };
}

/**
 * The `auth` config section of a gateway validating the IdP's JWTs (discovery unless `jwks_url`
 * is given in `jwt`), with introspection of its opaque tokens beside when `introspection` is true.
 */
export function jwtAuthConfig(
  idp: JwtIdp,
  jwt: Record<string, unknown> = {},
  introspection = false,
): Record<string, unknown> {
  return {
    realm: "api",
    jwt: { issuer: idp.issuer, audience: [AUDIENCE], ...jwt },
    ...(introspection
      ? {
          introspection: {
            url: idp.introspectionUrl,
            client_id: GATEWAY_CLIENT_ID,
            client_secret: GATEWAY_CLIENT_SECRET,
          },
        }
      : {}),
  };
}
