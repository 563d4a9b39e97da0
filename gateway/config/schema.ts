/**
 * The one configuration schema (SPEC §7). Every key has its default and its description beside it;
 * `config/gateway.example.yaml` and the README's reference are written from this file.
 *
 * Cross-field checks (a route naming an unknown upstream, an unknown plan or class) are not here:
 * `cross-checks.ts` runs them on the raw document, so they are reported together with the shape
 * errors of every section, each with its key path (SPEC §7).
 */
import { z } from "zod";
import { authSchema } from "./auth-schema.js";
import { corsSchema } from "./cors-schema.js";
import { decisionSchema } from "./decision-schema.js";
import { durationMs, durationMsOrOff, nonNegativeInt, port, positiveInt } from "./primitives.js";
import { rateLimitsSchema } from "./rate-limits-schema.js";
import { routeSchema } from "./route-schema.js";
import { reloadSchema } from "./reload-schema.js";
import { loadSheddingSchema } from "./shedding-schema.js";
import { notificationsSchema } from "./notifications-schema.js";
import { listenTlsSchema } from "./tls-schema.js";
import { tracingSchema } from "./tracing-schema.js";
import { upstreamSchema } from "./upstream-schema.js";
import { workersSchema } from "./workers-schema.js";

const listenerSchema = (defaultPort: number) =>
  z.strictObject({
    host: z.string().min(1).default("0.0.0.0").describe("Interface to bind."),
    port: port.default(defaultPort).describe("TCP port; 0 picks a free one (tests)."),
  });

const listenSchema = listenerSchema(8080).extend({
  enabled: z
    .boolean()
    .default(true)
    .describe("Serve the API listener; false for a decision-only deployment (needs `decision`)."),
  grace_ms: durationMs.default(10_000).describe("Shutdown: time in-flight requests have to finish (ms)."),
  headers_timeout_ms: durationMs.default(10_000).describe("Time a client has to send its headers (ms)."),
  request_timeout_ms: durationMsOrOff
    .default(300_000)
    .describe("Time a client has to send its whole request (ms); 0 disables."),
  keep_alive_timeout_ms: durationMs
    .default(5_000)
    .describe("Idle keep-alive client sockets close after (ms)."),
  max_header_bytes: positiveInt.default(16_384).describe("Largest request head accepted (bytes); 431 above."),
  max_body_bytes: nonNegativeInt
    .default(0)
    .describe("Largest request body (bytes) unless the route sets its own; 413 above, 0 = no limit."),
  tls: listenTlsSchema.optional().describe("TLS on the API listener; without it plain HTTP/1.1."),
  http2: z
    .boolean()
    .default(true)
    .describe("With `tls`: ALPN offers h2 and http/1.1; false offers http/1.1 only."),
  http2_max_streams: positiveInt.default(100).describe("HTTP/2: concurrent streams per connection."),
});

/** The YAML document's shape, with defaults applied (SPEC §7). */
export const gatewayConfigSchema = z.strictObject({
  listen: listenSchema.prefault({}),
  admin: listenerSchema(9090)
    .extend({
      token_file: z
        .string()
        .min(1)
        .optional()
        .describe(
          "File holding the admin Bearer token (one line) that enables /usage and /overrides (SPEC §21); re-read on reload. Without it those paths answer 404.",
        ),
    })
    .prefault({}),
  trust_proxy: nonNegativeInt.default(0).describe("X-Forwarded-For hops to trust for the client IP."),
  workers: workersSchema,
  reload: reloadSchema,
  upstreams: z
    .record(z.string().min(1), upstreamSchema)
    .refine((u) => Object.keys(u).length > 0, { error: "expected at least one upstream" }),
  routes: z.array(routeSchema).min(1, { error: "expected at least one route" }),
  auth: authSchema,
  rate_limits: rateLimitsSchema,
  cors: corsSchema
    .optional()
    .describe("CORS for browser clients (SPEC §14); without it OPTIONS is an ordinary request."),
  decision: decisionSchema
    .optional()
    .describe("The decision listener for an existing edge proxy (SPEC §23); none without it."),
  notifications: notificationsSchema
    .optional()
    .describe("Webhooks told of threshold crossings in calendar windows (SPEC §21); none without it."),
  load_shedding: loadSheddingSchema
    .optional()
    .describe("Priorities by plan and their shares of each upstream's limit (SPEC §18); none without it."),
  headers: z
    .strictObject({
      ietf: z.boolean().default(false).describe("Add RateLimit-Policy and RateLimit (IETF draft -10)."),
    })
    .prefault({}),
  tracing: tracingSchema
    .prefault({})
    .describe("OpenTelemetry traces over OTLP/HTTP (SPEC §13); off without an endpoint."),
  log: z
    .strictObject({
      level: z
        .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
        .default("info")
        .describe("pino level; the LOG_LEVEL environment variable overrides it."),
      format: z
        .enum(["json", "pretty"])
        .default("json")
        .describe("`json` lines, or `pretty` (pino-pretty's coloured text) for development."),
    })
    .prefault({}),
});

/** Input type (what YAML may contain). */
export type GatewayConfigInput = z.input<typeof gatewayConfigSchema>;
/** The validated, defaulted configuration; frozen by `loadConfig`. */
export type GatewayConfig = z.output<typeof gatewayConfigSchema>;
/** One limit class as configured. */
export type ClassConfig = GatewayConfig["rate_limits"]["classes"][string];
/** Redis store settings. */
export type RedisConfig = NonNullable<GatewayConfig["rate_limits"]["store"]["redis"]>;
export type { JwtConfig, TokenCacheConfig } from "./auth-schema.js";
