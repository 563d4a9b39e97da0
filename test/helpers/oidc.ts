/**
 * A real RFC 7662 authorization server for tests: oidc-provider 9 in-process on 127.0.0.1, with a
 * client-credentials client `app` (issues tokens) and the gateway's client. It counts the HTTP
 * requests that reach its introspection endpoint and can be stopped and started again on the same
 * port (an outage), keeping the tokens it issued. A token can carry extra members (a `plan`, a
 * `sub`), which its introspection response then includes (RFC 7662 §2.2 extension members).
 */
import http from "node:http";
// @ts-expect-error -- oidc-provider ships no types; the part used here is typed just below.
import UntypedProvider from "oidc-provider";
import { freePort } from "./redis-server.js";

/** The slice of oidc-provider 9's `Provider` the test servers use. */
export const Provider = UntypedProvider as new (
  issuer: string,
  configuration: Record<string, unknown>,
) => { callback(): http.RequestListener };

/** Token-request header whose JSON object becomes the issued token's extra members. */
const EXTRA_CLAIMS_HEADER = "x-test-extra-claims";

/** Client id the gateway authenticates with (HTTP Basic). */
export const GATEWAY_CLIENT_ID = "gateway";
/** Its secret; exercises RFC 6749 §2.3.1 form-encoding before base64. */
export const GATEWAY_CLIENT_SECRET = "gw secret:+/%&=";

/** A running authorization server. */
export interface AuthServer {
  port: number;
  introspectionUrl: string;
  /** HTTP requests that reached the introspection endpoint since start. */
  introspections(): number;
  /**
   * A real access token from the client_credentials grant (scope: space-separated).
   * @param extra - members added to the token and so to its introspection response, e.g.
   *   `{ plan: "pro", sub: "user-1" }` (oidc-provider's `extraTokenClaims`)
   */
  issueToken(scope: string, extra?: Record<string, unknown>): Promise<string>;
  /** Closes the listener and every connection: the gateway sees connection refused. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
  readonly running: boolean;
}

/** Options of {@link startAuthServer}. */
export interface AuthServerOptions {
  /** Lifetime of issued access tokens (s). @default 600 */
  tokenTtlS?: number;
  /** Delay before an introspection request is handled (ms): a loaded server. @default 0 */
  introspectionDelayMs?: number;
}

/**
 * oidc-provider configuration of the test servers: clients `app` (`app-secret`, issues tokens) and
 * `gateway` (`gatewaySecret`), both client_credentials with scopes `read write`, and introspection
 * open to any authenticated client. The token request's `x-test-extra-claims` header (JSON) becomes
 * the token's extra members (`extraTokenClaims`); the introspection response spreads them under
 * its own fields, so `plan` and, for a client_credentials token that has none, `sub` come through.
 * @param tokenTtlS - lifetime of issued access tokens (s)
 * @param adapter - an oidc-provider adapter class; default its in-memory LRU (1000 entries)
 */
export function providerConfiguration(
  gatewaySecret: string,
  tokenTtlS: number,
  adapter?: unknown,
): Record<string, unknown> {
  const client = (client_id: string, client_secret: string) => ({
    client_id,
    client_secret,
    grant_types: ["client_credentials"],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: "client_secret_basic",
    scope: "read write",
  });
  return {
    ...(adapter === undefined ? {} : { adapter }),
    clients: [client("app", "app-secret"), client(GATEWAY_CLIENT_ID, gatewaySecret)],
    scopes: ["read", "write"],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true, allowedPolicy: () => true },
    },
    ttl: { ClientCredentials: tokenTtlS },
    extraTokenClaims: (ctx: { get(name: string): string } | undefined) => {
      const extra = ctx?.get(EXTRA_CLAIMS_HEADER);
      return extra ? (JSON.parse(extra) as Record<string, unknown>) : undefined;
    },
    cookies: { keys: ["test-cookie-key"] },
  };
}

/** Starts the server on a free port. */
export async function startAuthServer(options: AuthServerOptions = {}): Promise<AuthServer> {
  const { tokenTtlS = 600, introspectionDelayMs = 0 } = options;
  let introspections = 0;
  let handle: http.RequestListener = () => {};
  const server = http.createServer((req, res) => {
    if (req.url !== "/token/introspection") return handle(req, res);
    introspections += 1;
    if (introspectionDelayMs === 0) return handle(req, res);
    setTimeout(() => handle(req, res), introspectionDelayMs);
  });
  // A port of the test range (not an ephemeral one): `start()` after `stop()` binds it again.
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, providerConfiguration(GATEWAY_CLIENT_SECRET, tokenTtlS));
  handle = provider.callback();
  const appBasic = `Basic ${Buffer.from("app:app-secret").toString("base64")}`;
  let running = true;
  return {
    port,
    introspectionUrl: `${issuer}/token/introspection`,
    introspections: () => introspections,
    get running() {
      return running;
    },
    async issueToken(scope, extra) {
      const res = await fetch(`${issuer}/token`, {
        method: "POST",
        headers: {
          authorization: appBasic,
          "content-type": "application/x-www-form-urlencoded",
          ...(extra === undefined ? {} : { [EXTRA_CLAIMS_HEADER]: JSON.stringify(extra) }),
        },
        body: new URLSearchParams({ grant_type: "client_credentials", scope }).toString(),
      });
      const body = (await res.json()) as { access_token?: string };
      if (res.status !== 200 || body.access_token === undefined) throw new Error(JSON.stringify(body));
      return body.access_token;
    },
    async stop() {
      if (!running) return;
      running = false;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
    async start() {
      if (running) return;
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, "127.0.0.1", () => {
          server.off("error", reject);
          resolve();
        });
      });
      running = true;
    },
  };
}

/**
 * The `auth` config section for a gateway that introspects against `auth`.
 * @param cache - the `cache` section
 * @param timeoutMs - introspection timeout (ms)
 */
export function introspectionAuthConfig(
  auth: AuthServer,
  cache: Record<string, number> = {},
  timeoutMs = 2000,
): Record<string, unknown> {
  return {
    realm: "api",
    introspection: {
      url: auth.introspectionUrl,
      client_id: GATEWAY_CLIENT_ID,
      client_secret: GATEWAY_CLIENT_SECRET,
      timeout_ms: timeoutMs,
      cache,
    },
  };
}
