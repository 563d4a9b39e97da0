/**
 * Starts a real gateway in-process on ephemeral ports, from a YAML-shaped object merged over a
 * small base (memory store, static test tokens, silent logs).
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import pino, { type Logger } from "pino";
import { stringify } from "yaml";
import type { Clock } from "../../gateway/base/clock.js";
import { parseConfig } from "../../gateway/config/load.js";
import { createGateway, type Gateway } from "../../gateway/server/server.js";

/** Directory of test fixtures. */
export const FIXTURES = fileURLToPath(new URL("../fixtures/", import.meta.url));
/** The test tokens file: `valid-token` (sub alice, scope "read write"), `reader-token` (sub bob, scope read), `client-token` (client_id svc, no sub), `inactive-token`. */
export const TOKENS_FILE = path.join(FIXTURES, "gateway-tokens.yaml");

/** A started gateway. */
export interface TestGateway {
  gateway: Gateway;
  url: string;
  adminUrl: string;
  apiPort: number;
  /** The decision listener's base URL (SPEC §23), "" without a `decision` block. */
  decisionUrl: string;
  close(): Promise<void>;
}

/** Shallow-per-top-level-key merge of `overrides` over the base config. */
export function testConfig(
  upstreamUrl: string,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    listen: { host: "127.0.0.1", port: 0, grace_ms: 2000 },
    admin: { host: "127.0.0.1", port: 0 },
    upstreams: { docs: { url: upstreamUrl, timeout_ms: 2000 } },
    routes: [{ prefix: "/v1", upstream: "docs" }],
    auth: { realm: "api", static: { tokens_file: TOKENS_FILE } },
    rate_limits: {
      classes: {
        search: {
          match: { paths: ["/v1/search"] },
          algorithm: "sliding_log",
          windows: [{ limit: 5, window_s: 60 }],
        },
        read: { match: { methods: ["GET", "HEAD"] }, windows: [{ limit: 100, window_s: 3600 }] },
        write: {
          match: { methods: ["POST", "PUT", "PATCH", "DELETE"] },
          windows: [
            { limit: 3, window_s: 10 },
            { limit: 50, window_s: 3600 },
          ],
        },
      },
      anonymous: { windows: [{ limit: 20, window_s: 3600 }] },
    },
    log: { level: "silent" },
    ...overrides,
  };
}

/**
 * @param config - a config object (see {@link testConfig})
 * @param options - clock and logger overrides
 */
export async function startGateway(
  config: Record<string, unknown>,
  options: { clock?: Clock; logger?: Logger } = {},
): Promise<TestGateway> {
  const loaded = { config: parseConfig(stringify(config), "test"), baseDir: FIXTURES };
  const gateway = createGateway(loaded, {
    clock: options.clock,
    logger: options.logger ?? pino({ level: "silent" }),
  });
  const { apiPort, adminPort, decisionPort } = await gateway.listen();
  return {
    gateway,
    apiPort,
    url: `http://127.0.0.1:${apiPort}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    decisionUrl: decisionPort === 0 ? "" : `http://127.0.0.1:${decisionPort}`,
    close: () => gateway.close(500),
  };
}
