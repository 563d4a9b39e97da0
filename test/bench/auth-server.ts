/**
 * The identity provider of the cold-token runs (child process): oidc-provider 9, set up as
 * test/helpers/jwt-idp.ts does (its `jwtProviderConfiguration`: RFC 7662 introspection of opaque
 * tokens, and JWT access tokens for one resource, signed RS256 as most IdPs do by default), with
 * an unbounded Map adapter instead of the default memory adapter (an LRU of 1000 entries, which
 * would forget most of the tokens issued for the run). It issues `count` opaque access tokens and
 * `jwtCount` JWT access tokens (plus one more, the warm cell's) through its own token endpoint,
 * `concurrency` at a time, writes them one per line to `tokensFile` and `tokensFile.jwt`, and
 * prints one JSON line `{ introspectionUrl, clientId, clientSecret, issuer, audience, issued,
 * issueMs, jwtIssued, jwtIssueMs, warmJwt }` on stdout.
 *
 * Usage: `auth-server.ts <port> <tokensFile> <count> <jwtCount>`
 */
import { writeFileSync } from "node:fs";
import http from "node:http";
import { performance } from "node:perf_hooks";
import { AUDIENCE, jwtProviderConfiguration, signingKey } from "../helpers/jwt-idp.js";
import { GATEWAY_CLIENT_ID, Provider } from "../helpers/oidc.js";

const port = Number(process.argv[2]);
const tokensFile = process.argv[3]!;
const count = Math.min(Math.max(Number(process.argv[4] ?? 10_000), 1), 200_000);
const jwtCount = Math.min(Math.max(Number(process.argv[5] ?? 0), 0), 200_000);
const CONCURRENCY = 32;
const CLIENT_SECRET = "bench-gateway-secret";

type Payload = Record<string, unknown>;

/** oidc-provider adapter on plain Maps (one per model), no eviction: lives as long as the run. */
class MapAdapter {
  private static readonly stores = new Map<string, Map<string, Payload>>();
  private readonly store: Map<string, Payload>;

  constructor(name: string) {
    let s = MapAdapter.stores.get(name);
    if (s === undefined) MapAdapter.stores.set(name, (s = new Map()));
    this.store = s;
  }
  async upsert(id: string, payload: Payload): Promise<void> {
    this.store.set(id, payload);
  }
  async find(id: string): Promise<Payload | undefined> {
    return this.store.get(id);
  }
  async findByUserCode(): Promise<undefined> {
    return undefined;
  }
  async findByUid(): Promise<undefined> {
    return undefined;
  }
  async consume(id: string): Promise<void> {
    const p = this.store.get(id);
    if (p !== undefined) p.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id: string): Promise<void> {
    this.store.delete(id);
  }
  async revokeByGrantId(): Promise<void> {}
}

const issuer = `http://127.0.0.1:${port}`;
const key = await signingKey("bench-rs256", "RS256");
const provider = new Provider(issuer, jwtProviderConfiguration([key], 3600, CLIENT_SECRET, MapAdapter));
const server = http.createServer({ keepAliveTimeout: 65_000 }, provider.callback());
await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));

const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
const appBasic = `Basic ${Buffer.from("app:app-secret").toString("base64")}`;
const OPAQUE = "grant_type=client_credentials&scope=read";
const JWT = `${OPAQUE}&resource=${encodeURIComponent(AUDIENCE)}`;

function issueOne(form: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${issuer}/token`,
      {
        method: "POST",
        agent,
        headers: {
          authorization: appBasic,
          "content-type": "application/x-www-form-urlencoded",
          "content-length": form.length,
        },
        timeout: 10_000,
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (c: string) => (body += c));
        res.on("end", () => {
          const token = (JSON.parse(body) as { access_token?: string }).access_token;
          if (res.statusCode === 200 && token !== undefined) resolve(token);
          else reject(new Error(`token endpoint answered ${res.statusCode}: ${body}`));
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error("token request timed out")));
    req.on("error", reject);
    req.end(form);
  });
}

/** Issues `n` tokens with `form`, CONCURRENCY at a time. */
async function issueMany(n: number, form: string): Promise<{ tokens: string[]; ms: number }> {
  const started = performance.now();
  const tokens: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        next++;
        tokens.push(await issueOne(form));
      }
    }),
  );
  return { tokens, ms: performance.now() - started };
}

const opaque = await issueMany(count, OPAQUE);
writeFileSync(tokensFile, opaque.tokens.join("\n") + "\n");
const jwts = await issueMany(jwtCount + 1, JWT);
const warmJwt = jwts.tokens.pop()!;
writeFileSync(`${tokensFile}.jwt`, jwts.tokens.join("\n") + "\n");
agent.destroy();
process.stdout.write(
  JSON.stringify({
    introspectionUrl: `${issuer}/token/introspection`,
    clientId: GATEWAY_CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    issuer,
    audience: AUDIENCE,
    issued: opaque.tokens.length,
    issueMs: Math.round(opaque.ms),
    jwtIssued: jwts.tokens.length,
    jwtIssueMs: Math.round(jwts.ms),
    warmJwt,
  }) + "\n",
);
process.on("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
