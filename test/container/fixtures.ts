/**
 * What the container test runs the image against, all on the loopback of the test's own network
 * namespace: an upstream (with a slow endpoint for the drain check), the config files a user mounts
 * over /etc/gateway/gateway.yaml, and a reporter that prints one line a check and a closing count.
 */
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse, Server } from "node:http";
import path from "node:path";
import { listen } from "../helpers/http.js";

/** The static token the configs accept (auth.static) and the identity it maps to. */
export const TOKEN = "container-test-token";
export const BEARER = { authorization: `Bearer ${TOKEN}` };

/** How long the upstream holds GET /v1/slow before answering (ms); well under listen.grace_ms. */
export const SLOW_MS = 3000;

export interface Upstream {
  server: Server;
  port: number;
  /** Resolves when a request to /v1/slow has reached the upstream. */
  slowArrived(): Promise<void>;
}

/** An upstream on 127.0.0.1:0: `/v1/slow` answers after {@link SLOW_MS}, anything else at once. */
export async function startUpstream(): Promise<Upstream> {
  let arrived: () => void = () => undefined;
  let arrival = new Promise<void>((r) => (arrived = r));
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const body = JSON.stringify({ path: req.url, subject: req.headers["x-auth-subject"] ?? null });
    if (req.url === "/v1/slow") {
      arrived();
      setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end(body), SLOW_MS);
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(body);
  };
  const { server, port } = await listen(handler);
  return {
    server,
    port,
    slowArrived: async () => {
      await arrival;
      arrival = new Promise<void>((r) => (arrived = r));
    },
  };
}

export interface ConfigOptions {
  upstreamPort: number;
  apiPort: number;
  adminPort: number;
  /** Standalone Redis URL; omitted: the in-process memory store. */
  redisUrl?: string;
  /** Limit of the `read` class per 60 s. */
  readLimit: number;
}

/**
 * A gateway.yaml as a user writes one (SPEC §7) with a static token file beside it, in `dir`
 * (readable by the image's uid 1000). Returns the two paths to mount.
 */
export function writeConfig(dir: string, o: ConfigOptions): { config: string; tokens: string } {
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  chmodSync(dir, 0o755);
  const store =
    o.redisUrl === undefined
      ? []
      : [
          `  store: { redis: { url: "${o.redisUrl}", key_prefix: ctest } }`,
          "  failure_mode: closed # a Redis problem must show, not fall back to memory",
        ];
  const config = [
    `listen: { host: 0.0.0.0, port: ${o.apiPort}, grace_ms: 10000 }`,
    `admin: { host: 0.0.0.0, port: ${o.adminPort} }`,
    "upstreams:",
    `  app: { url: "http://127.0.0.1:${o.upstreamPort}", timeout_ms: 30000 }`,
    "routes:",
    "  - { prefix: /v1, upstream: app }",
    "auth:",
    "  realm: api",
    "  static: { tokens_file: tokens.yaml } # beside this file: /etc/gateway/tokens.yaml",
    "rate_limits:",
    ...store,
    "  classes:",
    '    slow: { match: { paths: ["/v1/slow"] }, windows: [{ limit: 100, window_s: 60 }] }',
    `    read: { match: { methods: [GET] }, windows: [{ limit: ${o.readLimit}, window_s: 60 }] }`,
    "",
  ].join("\n");
  const tokens = `${TOKEN}:\n  sub: container-user\n  client_id: container-test\n  scope: read\n`;
  const paths = { config: path.join(dir, "gateway.yaml"), tokens: path.join(dir, "tokens.yaml") };
  writeFileSync(paths.config, config, { mode: 0o644 });
  writeFileSync(paths.tokens, tokens, { mode: 0o644 });
  return paths;
}

/** `-v` options mounting a config over /etc/gateway/gateway.yaml and its token file beside it. */
export function configMounts(paths: { config: string; tokens: string }): string[] {
  return [
    "-v",
    `${paths.config}:/etc/gateway/gateway.yaml:ro`,
    "-v",
    `${paths.tokens}:/etc/gateway/tokens.yaml:ro`,
  ];
}

/** Runs named checks in order, prints `ok`/`FAIL` for each, and the closing count. */
export class Checks {
  private passed = 0;
  private failed: string[] = [];

  /** Runs `fn`; a throw (an assertion) fails the check and the run goes on. */
  async check(name: string, fn: () => Promise<void> | void): Promise<boolean> {
    try {
      await fn();
      this.passed += 1;
      console.log(`ok    ${name}`);
      return true;
    } catch (err) {
      this.failed.push(name);
      console.log(`FAIL  ${name}\n      ${err instanceof Error ? err.message : String(err)}`);
      return false;
    }
  }

  /** Prints the summary; true when nothing failed and something ran. */
  report(): boolean {
    if (this.failed.length > 0) console.log(`failed: ${this.failed.join("; ")}`);
    console.log(`${this.passed} passed, ${this.failed.length} failed`);
    return this.failed.length === 0 && this.passed > 0;
  }
}
