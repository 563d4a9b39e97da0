/**
 * The one configuration schema (SPEC §7). Every key has its default and its description beside it;
 * `config/gateway.example.yaml` and the README's reference are written from this file.
 *
 * Cross-field checks (a route naming an unknown upstream, a default class that does not exist)
 * live in {@link gatewayConfigSchema}'s `superRefine` so that they are reported together with the
 * shape errors, each with its key path.
 */
import { z } from "zod";
import { corsSchema } from "./cors-schema.js";
import { httpMethod, nonNegativeInt, port, positiveInt } from "./primitives.js";
import { tracingSchema } from "./tracing-schema.js";

const listenerSchema = (defaultPort: number) =>
  z.strictObject({
    host: z.string().min(1).default("0.0.0.0").describe("Interface to bind."),
    port: port.default(defaultPort).describe("TCP port; 0 picks a free one (tests)."),
  });

const httpUrl = z.string().refine((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol), {
  error: "expected an http:// or https:// URL",
});

const upstreamSchema = z.strictObject({
  url: httpUrl.describe("Base URL of the upstream; the request path is appended to its path."),
  timeout_ms: positiveInt
    .default(30_000)
    .describe(
      "Time the upstream connection may stay silent (ms): before the response head 504, mid-body the client connection is reset.",
    ),
  connect_timeout_ms: positiveInt
    .default(5_000)
    .describe("Time to establish the TCP connection to the upstream (ms); 502 after."),
  max_sockets: positiveInt.default(256).describe("Keep-alive agent: sockets per upstream."),
  keep_alive_ms: positiveInt
    .default(4_000)
    .describe("Idle time before a pooled upstream socket is closed (ms); below the upstream's own."),
  tls: z
    .strictObject({
      ca_file: z
        .string()
        .min(1)
        .optional()
        .describe("PEM CA bundle to trust instead of the system store (a private CA)."),
      cert_file: z.string().min(1).optional().describe("PEM client certificate chain, for mutual TLS."),
      key_file: z.string().min(1).optional().describe("PEM private key of `cert_file`."),
      servername: z
        .string()
        .min(1)
        .optional()
        .describe("SNI and the name the certificate must carry; the URL's host name when absent."),
      reject_unauthorized: z
        .boolean()
        .default(true)
        .describe("Verify the upstream's certificate; false only for tests."),
    })
    .optional()
    .describe("TLS to an `https://` upstream, for plain requests and WebSocket upgrades alike."),
});

const routeSchema = z.strictObject({
  prefix: z
    .string()
    .regex(/^\/[^?#]*$/, { error: "expected a path prefix starting with /" })
    .describe("Path prefix, matched at a segment boundary; longest prefix wins."),
  upstream: z.string().min(1).describe("Name of an entry of `upstreams`."),
  scopes: z
    .array(z.string().min(1))
    .default([])
    .describe("OAuth scopes the token must all carry (403 insufficient_scope otherwise)."),
  strip_prefix: z.boolean().default(false).describe("Remove the prefix before forwarding."),
});

const cacheSchema = z.strictObject({
  max_entries: positiveInt.default(100_000).describe("Token cache capacity (entries)."),
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
  timeout_ms: positiveInt.default(2_000).describe("Introspection call timeout (ms)."),
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

const authSchema = z
  .strictObject({
    realm: z.string().min(1).default("api").describe("Realm in WWW-Authenticate challenges."),
    introspection: introspectionSchema.optional(),
    static: staticSchema.optional(),
    forward_authorization: z
      .boolean()
      .default(true)
      .describe("Forward the client's Authorization header to the upstream unchanged."),
  })
  .superRefine((auth, ctx) => {
    if ((auth.introspection === undefined) === (auth.static === undefined)) {
      ctx.addIssue({
        code: "custom",
        message:
          auth.introspection === undefined
            ? "expected a token source: `introspection` (an RFC 7662 endpoint) or `static` (a tokens file)"
            : "expected exactly one of `introspection` or `static`",
        input: Object.keys(auth),
      });
    }
  });

const windowSchema = z.strictObject({
  limit: positiveInt.describe("Requests admitted per window."),
  window_s: positiveInt.describe("Window length (s)."),
});

const windowsSchema = z.array(windowSchema).min(1, { error: "expected at least one window" });

const classSchema = z.strictObject({
  match: z
    .strictObject({
      methods: z.array(httpMethod).min(1).optional().describe("HTTP methods; any when absent."),
      paths: z
        .array(z.string().regex(/^\//, { error: "expected a path pattern starting with /" }))
        .min(1)
        .optional()
        .describe("Path patterns; `*` is one segment; a pattern covers everything below it."),
    })
    .default({}),
  algorithm: z
    .enum(["sliding_window", "sliding_log"])
    .default("sliding_window")
    .describe("sliding_window: weighted counters, constant memory; sliding_log: exact."),
  mode: z.enum(["enforce", "shadow"]).default("enforce").describe("shadow: count and report, never reject."),
  windows: windowsSchema,
});

const redisSchema = z
  .strictObject({
    url: z.string().optional().describe("Standalone: redis://[:password@]host:port[/db]."),
    cluster: z.array(z.string()).min(1).optional().describe("Cluster seed nodes (redis:// URLs)."),
    sentinels: z.array(z.string()).min(1).optional().describe("Sentinel addresses (redis:// URLs)."),
    name: z.string().optional().describe("Sentinel master name."),
    password: z.string().optional().describe("Password for Cluster/Sentinel data nodes."),
    key_prefix: z.string().min(1).default("rl").describe("Prefix of every limiter key."),
    command_timeout_ms: positiveInt
      .default(100)
      .describe("Time a limiter call may wait for Redis before failing over (ms)."),
  })
  .superRefine((r, ctx) => {
    const kinds = [r.url, r.cluster, r.sentinels].filter((v) => v !== undefined).length;
    if (kinds !== 1) {
      ctx.addIssue({ code: "custom", message: "expected exactly one of `url`, `cluster` or `sentinels`" });
    }
    if (r.sentinels !== undefined && r.name === undefined) {
      ctx.addIssue({ code: "custom", path: ["name"], message: "required with `sentinels`" });
    }
  });

const rateLimitsSchema = z.strictObject({
  store: z
    .strictObject({ redis: redisSchema.optional() })
    .default({})
    .describe("Omit `redis` for the in-process memory store."),
  memory: z
    .strictObject({
      max_keys: positiveInt.default(100_000).describe("Memory store: identities x classes kept (LRU)."),
    })
    .prefault({}),
  failure_mode: z.enum(["open", "closed"]).default("open").describe("Behaviour while Redis fails."),
  expected_replicas: positiveInt.default(1).describe("Divides limits while failing open."),
  status_path: z
    .string()
    .regex(/^\//)
    .nullable()
    .default("/rate_limit")
    .describe("Authenticated status endpoint; null disables it."),
  classes: z
    .record(z.string().regex(/^[a-z][a-z0-9_]*$/, { error: "expected a lower-case class name" }), classSchema)
    .refine((c) => Object.keys(c).length > 0, { error: "expected at least one class" }),
  default_class: z
    .string()
    .optional()
    .describe("Class for calls no `match` selects; the last class when absent."),
  anonymous: z
    .strictObject({ windows: windowsSchema })
    .default({ windows: [{ limit: 60, window_s: 3600 }] })
    .describe("Windows for unauthenticated calls, keyed by client IP."),
});

const listenSchema = listenerSchema(8080).extend({
  grace_ms: positiveInt.default(10_000).describe("Shutdown: time in-flight requests have to finish (ms)."),
  headers_timeout_ms: positiveInt.default(10_000).describe("Time a client has to send its headers (ms)."),
  request_timeout_ms: nonNegativeInt
    .default(300_000)
    .describe("Time a client has to send its whole request (ms); 0 disables."),
  keep_alive_timeout_ms: positiveInt
    .default(5_000)
    .describe("Idle keep-alive client sockets close after (ms)."),
  max_header_bytes: positiveInt.default(16_384).describe("Largest request head accepted (bytes); 431 above."),
});

/** The YAML document's shape, with defaults applied (SPEC §7). */
export const gatewayConfigSchema = z
  .strictObject({
    listen: listenSchema.prefault({}),
    admin: listenerSchema(9090).prefault({}),
    trust_proxy: nonNegativeInt.default(0).describe("X-Forwarded-For hops to trust for the client IP."),
    upstreams: z
      .record(z.string().min(1), upstreamSchema)
      .refine((u) => Object.keys(u).length > 0, { error: "expected at least one upstream" }),
    routes: z.array(routeSchema).min(1, { error: "expected at least one route" }),
    auth: authSchema,
    rate_limits: rateLimitsSchema,
    cors: corsSchema
      .optional()
      .describe("CORS for browser clients (SPEC §14); without it OPTIONS is an ordinary request."),
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
        level: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
      })
      .prefault({}),
  })
  .superRefine((cfg, ctx) => {
    for (const [name, u] of Object.entries(cfg.upstreams)) {
      const t = u.tls;
      if (t !== undefined && (t.cert_file === undefined) !== (t.key_file === undefined)) {
        ctx.addIssue({
          code: "custom",
          path: ["upstreams", name, "tls", t.cert_file === undefined ? "cert_file" : "key_file"],
          message: "`cert_file` and `key_file` go together",
        });
      }
    }
    cfg.routes.forEach((route, i) => {
      if (!Object.hasOwn(cfg.upstreams, route.upstream)) {
        ctx.addIssue({
          code: "custom",
          path: ["routes", i, "upstream"],
          message: `unknown upstream "${route.upstream}" (known: ${Object.keys(cfg.upstreams).join(", ")})`,
          input: route.upstream,
        });
      }
    });
    const dc = cfg.rate_limits.default_class;
    if (dc !== undefined && !Object.hasOwn(cfg.rate_limits.classes, dc)) {
      ctx.addIssue({
        code: "custom",
        path: ["rate_limits", "default_class"],
        message: `unknown class "${dc}"`,
        input: dc,
      });
    }
    if (Object.hasOwn(cfg.rate_limits.classes, "anonymous")) {
      ctx.addIssue({
        code: "custom",
        path: ["rate_limits", "classes", "anonymous"],
        message: "the name `anonymous` is reserved for `rate_limits.anonymous`",
      });
    }
  });

/** Input type (what YAML may contain). */
export type GatewayConfigInput = z.input<typeof gatewayConfigSchema>;
/** The validated, defaulted configuration; frozen by `loadConfig`. */
export type GatewayConfig = z.output<typeof gatewayConfigSchema>;
/** One limit class as configured. */
export type ClassConfig = GatewayConfig["rate_limits"]["classes"][string];
/** Redis store settings. */
export type RedisConfig = NonNullable<GatewayConfig["rate_limits"]["store"]["redis"]>;
/** Token cache settings. */
export type TokenCacheConfig = z.output<typeof cacheSchema>;
