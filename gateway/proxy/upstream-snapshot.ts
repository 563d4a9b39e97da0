/** `GET /upstreams` (SPEC §16): what an upstream and its endpoints show of their state. */

/** One endpoint in `GET /upstreams` (SPEC §16). */
export interface EndpointSnapshot {
  endpoint: string;
  url: string;
  weight: number;
  healthy: boolean;
  ejected: boolean;
  /** This endpoint's own tries in flight. */
  in_flight: number;
}

/** One upstream in `GET /upstreams`. */
export interface UpstreamSnapshot {
  balancer: string;
  /** SPEC §18: the effective concurrency limit, or null without one. */
  concurrency_limit: number | null;
  /** SPEC §18: calls admitted and not ended (the count the limit applies to). */
  in_flight: number;
  endpoints: EndpointSnapshot[];
}
