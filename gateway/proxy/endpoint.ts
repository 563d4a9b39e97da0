/**
 * One origin of an upstream (SPEC §16), Envoy's host in a cluster: its undici pool for plain
 * requests, its keep-alive agent and http-proxy-3 relay for WebSocket upgrades (both with the
 * upstream's TLS settings), its timeouts, and the state a balancer reads (`available`,
 * `inFlight`). Everything that talks to this origin goes through it.
 */
import { createHash } from "node:crypto";
import http from "node:http";
import https from "node:https";
import { Pool } from "undici";
import type { UpstreamConfig } from "../config/upstream-schema.js";
import { endpointsOf } from "../config/upstream-schema.js";
import {
  endpointMetrics,
  type EndpointMetrics,
  type UpstreamPoolMetrics,
} from "../observability/upstream-metrics.js";
import type { BalancedEndpoint } from "./balancing/balancer.js";
import { undiciConnect, type EndpointAddress } from "./endpoint-address.js";
import { WebSocketRelay, type UpgradeTimeouts } from "./websocket.js";

/**
 * What an endpoint's connections are made with: its URL, `connect_timeout_ms`, `max_sockets`,
 * `keep_alive_ms` and its TLS material (file contents, not names), as a SHA-256 digest. A reload
 * keeps an endpoint (its connections, calls in flight, health and ejection) when this is unchanged
 * (SPEC §7); everything else of its upstream applies per call.
 */
export function connectionKey(address: EndpointAddress, cfg: UpstreamConfig): string {
  const { url, tls } = address;
  const h = createHash("sha256");
  h.update(JSON.stringify([url, cfg.connect_timeout_ms, cfg.max_sockets, cfg.keep_alive_ms]));
  if (tls !== null) {
    h.update(JSON.stringify([tls.servername, tls.rejectUnauthorized]));
    for (const part of [tls.ca, tls.cert, tls.key]) h.update(part === undefined ? "-" : part).update("|");
  }
  return h.digest("hex");
}

/** One endpoint of an upstream. */
export class Endpoint implements BalancedEndpoint {
  /** Position in its upstream's endpoint list (the balancer's and outlier detector's index). */
  readonly index: number;
  /** `host:port` as configured: its name in metrics, logs and the admin listener. */
  readonly name: string;
  /** {@link name} as a JSON string (the access line's `endpoint`). */
  readonly json: string;
  readonly url: string;
  readonly weight: number;
  /** Healthy (active checks) and not ejected (outlier detection): maintained by the upstream. */
  available = true;
  /** Active health-check state (true without `health_check`). */
  healthy = true;
  /** Ejected by this process's outlier detection. */
  ejected = false;
  /** Calls in flight to this endpoint in this process (every attempt, upgrades until answered). */
  inFlight = 0;
  readonly pool: Pool;
  readonly ws: WebSocketRelay;
  /** The URL's path without its trailing slash ("" for the root), prepended to every path. */
  readonly basePath: string;
  /** `server.address` and `server.port` of the CLIENT spans (SPEC §13, §16). */
  readonly address: string;
  readonly port: number;
  /** Its children of the per-endpoint families (requests, time to head, errors), bound once. */
  readonly metrics: EndpointMetrics;
  /** {@link connectionKey} of the settings it was built with. */
  readonly connectionKey: string;
  /**
   * The upstream's `timeout_ms` (silence before and during the body of one try, ms) and
   * `connect_timeout_ms`: read per call, so a reload changes them without new connections.
   */
  readonly timeouts: UpgradeTimeouts;
  private readonly agent: http.Agent;

  /**
   * @param cfg - the upstream's settings: timeout_ms (silence before and during the body, ms; see
   *   {@link timeouts}), connect_timeout_ms (ms), max_sockets (connections to this endpoint),
   *   keep_alive_ms (ms)
   * @param at - where the endpoint is and its TLS settings ({@link endpointAddress})
   * @param metrics - this endpoint's children of the per-endpoint families
   */
  constructor(
    index: number,
    at: EndpointAddress,
    weight: number,
    cfg: UpstreamConfig,
    metrics: EndpointMetrics,
  ) {
    this.index = index;
    this.url = at.url;
    this.weight = weight;
    this.name = at.name;
    this.json = JSON.stringify(this.name);
    this.metrics = metrics;
    this.connectionKey = connectionKey(at, cfg);
    this.timeouts = { timeoutMs: cfg.timeout_ms, connectTimeoutMs: cfg.connect_timeout_ms };
    this.basePath = at.basePath;
    this.address = at.host;
    this.port = at.port;
    const tls = at.tls;
    this.pool = new Pool(at.origin, {
      connections: cfg.max_sockets,
      pipelining: 1,
      keepAliveTimeout: cfg.keep_alive_ms,
      // An upstream's `Keep-Alive: timeout=N` may shorten, never lengthen, the configured idle time.
      keepAliveMaxTimeout: cfg.keep_alive_ms,
      connect: undiciConnect(at, cfg.connect_timeout_ms),
    });
    const agentOptions = {
      keepAlive: true,
      maxSockets: cfg.max_sockets,
      maxFreeSockets: Math.min(cfg.max_sockets, 64),
      timeout: cfg.keep_alive_ms,
      scheduling: "lifo" as const,
    };
    this.agent = tls === null ? new http.Agent(agentOptions) : new https.Agent({ ...agentOptions, ...tls });
    this.ws = new WebSocketRelay(at.url, this.agent, tls?.rejectUnauthorized ?? true, this.timeouts);
  }

  /** Closes pooled sockets (and aborts what still runs on them). */
  close(): void {
    this.agent.destroy();
    this.pool.destroy().catch(ignore);
  }
}

function ignore(): void {}

/**
 * The endpoints of upstream `name` configured with `cfg` (SPEC §7, §16): `previous`'s endpoint at
 * the same place is kept, with its connections, calls in flight, health and ejection, when its
 * URL, weight and {@link connectionKey} are unchanged; any other is new.
 * @param addresses - each endpoint's address ({@link endpointAddress}, same order)
 * @param kept - receives the places of the endpoints kept
 */
export function endpointsFor(
  name: string,
  cfg: UpstreamConfig,
  addresses: readonly EndpointAddress[],
  pool: UpstreamPoolMetrics,
  previous: readonly Endpoint[],
  kept: number[],
): Endpoint[] {
  return endpointsOf(cfg).map((e, i) => {
    const old = previous[i];
    if (old !== undefined && old.url === e.url && old.weight === e.weight) {
      if (old.connectionKey === connectionKey(addresses[i]!, cfg)) {
        kept.push(i);
        return old;
      }
    }
    const metrics = endpointMetrics(pool, name, addresses[i]!.name);
    return new Endpoint(i, addresses[i]!, e.weight, cfg, metrics);
  });
}
