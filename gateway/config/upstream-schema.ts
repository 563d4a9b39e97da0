/**
 * `upstreams.<name>` (SPEC §6, §16): one backend, reached at one URL (`url`) or spread over several
 * endpoints (`endpoints`), with its balancer, active health checks and passive outlier detection.
 * Cross-field checks are in {@link upstreamProblems}, run on the raw document beside the schema.
 */
import { z } from "zod";
import { urlPort } from "../base/url-port.js";
import { durationMs, httpUrl, nonNegativeInt, positiveInt } from "./primitives.js";
import { list, mapping, text, type CrossProblem } from "./loose.js";
import { adaptiveConcurrencySchema } from "./shedding-schema.js";

const endpointSchema = z.strictObject({
  url: httpUrl.describe(
    "Base URL of this endpoint; every endpoint of an upstream has the same scheme and path.",
  ),
  weight: positiveInt.default(1).describe("Share of the calls relative to the other endpoints' weights."),
});

const healthCheckSchema = z.strictObject({
  path: z
    .string()
    .min(1)
    .describe("Path probed with GET, under the endpoint's base path; must start with /."),
  interval_ms: durationMs.default(2_000).describe("Time between two probes of one endpoint (ms)."),
  timeout_ms: durationMs.default(1_000).describe("A probe fails without a 2xx/3xx answer within this (ms)."),
  healthy_threshold: positiveInt
    .default(2)
    .describe("Consecutive passing probes that make an endpoint available again."),
  unhealthy_threshold: positiveInt
    .default(3)
    .describe("Consecutive failing probes that make an endpoint unavailable."),
});

const outlierSchema = z.strictObject({
  consecutive_failures: nonNegativeInt
    .default(5)
    .describe(
      "Consecutive failed calls (connect, reset, timeout, 502/503/504) that eject an endpoint; 0 turns it off.",
    ),
  base_ejection_ms: durationMs
    .default(30_000)
    .describe("The k-th ejection lasts k times this (ms), at most 300 s."),
  max_ejection_percent: z
    .int({ error: "expected an integer from 0 to 100" })
    .min(0, { error: "expected an integer from 0 to 100" })
    .max(100, { error: "expected an integer from 0 to 100" })
    .default(50)
    .describe("Most endpoints of the upstream ejected at once, in percent (at least one of two or more)."),
});

/** `hash_on`: `identity`, `ip`, or `header:<name>`. */
const hashOnSchema = z.string().regex(/^(identity|ip|header:[!#$%&'*+.^_`|~0-9A-Za-z-]+)$/, {
  error: "expected identity, ip or header:<name>",
});

export const upstreamSchema = z.strictObject({
  url: httpUrl
    .optional()
    .describe("Base URL of the upstream (one endpoint); the request path is appended to its path."),
  endpoints: z
    .array(endpointSchema)
    .optional()
    .describe("Several instances of the upstream, instead of `url`."),
  balancer: z
    .enum(["round_robin", "least_request", "consistent_hash"])
    .default("round_robin")
    .describe("How calls are spread over the available endpoints."),
  hash_on: hashOnSchema
    .optional()
    .describe("consistent_hash only: the key (identity by default, ip, or header:<name>)."),
  health_check: healthCheckSchema.optional().describe("Active probes of every endpoint; none without it."),
  outlier_detection: outlierSchema.prefault({}).describe("Passive ejection of endpoints whose calls fail."),
  timeout_ms: durationMs
    .default(30_000)
    .describe(
      "Time the upstream connection may stay silent (ms): before the response head 504, mid-body the client connection is reset.",
    ),
  connect_timeout_ms: durationMs
    .default(5_000)
    .describe("Time to establish the TCP connection to the upstream (ms); 502 after."),
  max_sockets: positiveInt.default(256).describe("Keep-alive agent: sockets per endpoint."),
  max_in_flight: positiveInt
    .optional()
    .describe(
      "Calls in flight to this upstream per process; above it 503 upstream_overloaded (circuit breaking).",
    ),
  adaptive_concurrency: adaptiveConcurrencySchema
    .optional()
    .describe(
      "A concurrency limit found from the upstream's latency (SPEC §18), per process; none without it.",
    ),
  retry_budget: z
    .strictObject({
      ratio: z
        .number({ error: "expected a number from 0 to 1" })
        .min(0, { error: "expected a number from 0 to 1" })
        .max(1, { error: "expected a number from 0 to 1" })
        .default(0.2)
        .describe("Retries in flight at most this share of the calls in flight to the upstream."),
      min_retries: nonNegativeInt
        .default(3)
        .describe("Retries in flight always allowed, whatever the ratio."),
    })
    .prefault({})
    .describe("Envoy's retry budget: bounds the extra load retries put on a failing upstream."),
  keep_alive_ms: durationMs
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

/** One upstream as configured. */
export type UpstreamConfig = z.output<typeof upstreamSchema>;

/** One endpoint as configured, `url` normalised to its weight-1 form. */
export interface EndpointConfig {
  url: string;
  weight: number;
}

/** The endpoints of an upstream: `endpoints`, or `url` as one endpoint of weight 1. */
export function endpointsOf(u: UpstreamConfig): EndpointConfig[] {
  if (u.endpoints !== undefined) return u.endpoints;
  return u.url === undefined ? [] : [{ url: u.url, weight: 1 }];
}

/**
 * `host:port` of an endpoint URL, as metrics, logs and the admin listener name it (SPEC §16); the
 * port is the scheme's default when the URL has none.
 */
export function endpointName(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${urlPort(u)}`;
}

/**
 * The cross-field problems of SPEC §16's validation list, read from the raw entry (so they are
 * reported beside any shape error of it): exactly one of `url` and `endpoints`, endpoints sharing
 * one scheme and base path and none listed twice, `hash_on` with `consistent_hash`, the health
 * check's path and timeout, the client certificate's pair.
 * @param raw - `upstreams.<name>` as written (values the schema refused are skipped)
 * @returns problems with their paths below `upstreams.<name>`
 */
export function upstreamProblems(raw: unknown): CrossProblem[] {
  const u = mapping(raw);
  if (u === undefined) return [];
  const out: CrossProblem[] = [];
  if ((u.url === undefined) === (u.endpoints === undefined)) {
    out.push({ path: [], message: "expected exactly one of `url` and `endpoints`" });
  }
  const endpoints = list(u.endpoints);
  if (endpoints !== undefined) {
    if (endpoints.length === 0) out.push({ path: ["endpoints"], message: "expected at least one endpoint" });
    const urls = endpoints
      .map((e) => text(mapping(e)?.url))
      .filter((url): url is string => url !== undefined && isHttpUrl(url));
    const shapes = new Set(urls.map(shapeOf));
    if (shapes.size > 1) {
      out.push({
        path: ["endpoints"],
        message: `every endpoint needs the same scheme and base path (found ${[...shapes].join(", ")})`,
      });
    }
    const names = urls.map(endpointName);
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice !== undefined) out.push({ path: ["endpoints"], message: `endpoint ${twice} is listed twice` });
  }
  // A balancer the schema refused says nothing about whether `hash_on` fits it.
  if (
    u.hash_on !== undefined &&
    ["round_robin", "least_request"].includes(String(u.balancer ?? "round_robin"))
  ) {
    out.push({ path: ["hash_on"], message: "`hash_on` needs `balancer: consistent_hash`" });
  }
  const h = mapping(u.health_check);
  if (h !== undefined) {
    const probePath = text(h.path);
    if (probePath !== undefined && !probePath.startsWith("/"))
      out.push({ path: ["health_check", "path"], message: "expected a path starting with /" });
    const [timeout, interval] = [h.timeout_ms ?? 1_000, h.interval_ms ?? 2_000];
    if (
      durationMs.safeParse(timeout).success &&
      durationMs.safeParse(interval).success &&
      timeout > interval
    ) {
      out.push({
        path: ["health_check", "timeout_ms"],
        message: `timeout_ms (${timeout}) must not exceed interval_ms (${interval})`,
      });
    }
  }
  const t = mapping(u.tls);
  if (t !== undefined && (t.cert_file === undefined) !== (t.key_file === undefined)) {
    out.push({
      path: ["tls", t.cert_file === undefined ? "cert_file" : "key_file"],
      message: "`cert_file` and `key_file` go together",
    });
  }
  return out;
}

/** An http:// or https:// URL `new URL` takes (the schema reports any other). */
function isHttpUrl(url: string): boolean {
  return URL.canParse(url) && /^https?:$/.test(new URL(url).protocol);
}

/** `http: /base` of a URL: what every endpoint of one upstream must share. */
function shapeOf(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//…${u.pathname.replace(/\/+$/, "") || "/"}`;
}
