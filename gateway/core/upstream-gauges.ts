/**
 * What the upstream gauges read of the configuration in force (SPEC §16, §18): each upstream's
 * concurrency limit and calls in flight, each endpoint's availability.
 */
import type { EndpointAvailability, UpstreamLoad } from "../observability/upstream-metrics.js";
import type { Runtime } from "./runtime.js";

/** Every upstream's concurrency limit and admitted calls, as the SPEC §18 gauges read them. */
export function* upstreamLoads(rt: Runtime): Iterable<UpstreamLoad> {
  for (const [upstream, u] of rt.upstreams) {
    const limit = u.admission === null ? null : u.admission.limit;
    yield { upstream, limit, inFlight: u.ledger.callsAdmitted };
  }
}

/** Every endpoint's availability, for `gateway_upstream_endpoint_available`. */
export function* endpointStates(rt: Runtime): Iterable<EndpointAvailability> {
  for (const [upstream, u] of rt.upstreams) {
    u.refreshEjections();
    for (const e of u.endpoints) yield { upstream, endpoint: e.name, available: e.available };
  }
}
