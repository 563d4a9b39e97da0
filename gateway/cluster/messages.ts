/**
 * What a cluster primary and its workers say to each other (SPEC §15): plain data over the
 * cluster's IPC channel (`serialization: "advanced"`, so a configuration travels as it is). The
 * primary validates every configuration; workers only build and apply what it sends, with the
 * hash the primary computed (SPEC §20: one hash per configuration across the group).
 */
import type { GatewayConfig } from "../config/schema.js";
import type { HealthReport } from "../proxy/health-checker.js";
import type { UpstreamSnapshot } from "../proxy/upstream-snapshot.js";
import type { AdminAnswer, AdminCall } from "../server/usage-admin.js";

/** One metric family as `Registry.getMetricsAsJSON()` returns it. */
export interface MetricJson {
  name: string;
  help: string;
  /** `counter`, `gauge`, `histogram` or `summary`. */
  type: string;
  aggregator: string;
  values: { value: number; labels: Record<string, string | number>; metricName?: string }[];
}

/** Primary to worker. */
export type ToWorker =
  /** Build the gateway from this validated configuration and listen. */
  | { type: "gw:start"; config: GatewayConfig; baseDir: string; hash: string }
  /** Build this configuration (read its files) without applying it; answer `gw:prepared`. */
  | { type: "gw:prepare"; id: number; config: GatewayConfig; baseDir: string; hash: string }
  /** Apply what `gw:prepare` built; answer `gw:committed`. */
  | { type: "gw:commit"; id: number; health: HealthReport[] }
  /** Drop what `gw:prepare` built. */
  | { type: "gw:abort"; id: number }
  /** Answer `gw:metrics` with the worker's registry. */
  | { type: "gw:metrics"; id: number }
  /** Active health results of the primary's probes (SPEC §16): a change, or every state. */
  | { type: "gw:health"; reports: HealthReport[] }
  /** Answer `gw:upstreams` with the worker's view of its upstreams. */
  | { type: "gw:upstreams"; id: number }
  /** Answer `gw:admin` with the worker's answer to a `/usage` or `/overrides` call (SPEC §21). */
  | { type: "gw:admin"; id: number; call: AdminCall }
  /** Drain and exit 0 (SIGTERM reached the primary). */
  | { type: "gw:stop" };

/** Worker to primary. */
export type FromWorker =
  /** Listening for `gw:start` (a message sent before would be lost while its modules load). */
  | { type: "gw:hello" }
  /**
   * Serving on `apiPort` and `decisionPort` (the ports every worker shares; 0 for a listener the
   * configuration does not have).
   */
  | { type: "gw:listening"; apiPort: number; decisionPort: number }
  /** The gateway could not be built or bind; the worker exits 1. */
  | { type: "gw:failed"; error: string }
  /** `error` null: built, waiting for commit or abort. */
  | { type: "gw:prepared"; id: number; error: string | null }
  | { type: "gw:committed"; id: number }
  | { type: "gw:metrics"; id: number; metrics: MetricJson[] }
  | { type: "gw:upstreams"; id: number; upstreams: Record<string, UpstreamSnapshot> }
  | { type: "gw:admin"; id: number; answer: AdminAnswer }
  /** The worker's `/readyz` answer changed (sent at start and on every change). */
  | { type: "gw:ready"; ready: boolean };

/** True for a message of this protocol (the channel also carries node:cluster's own). */
export function isGatewayMessage<T extends { type: string }>(m: unknown): m is T {
  return (
    typeof m === "object" &&
    m !== null &&
    typeof (m as { type?: unknown }).type === "string" &&
    (m as { type: string }).type.startsWith("gw:")
  );
}
