/**
 * An upstream (SPEC §16), Envoy's cluster: its endpoints, the balancer that picks one per call,
 * passive outlier detection fed by every call's result, and the active health state its probes
 * report. It is what the core's proxy outcome names; each {@link Endpoint} owns the connections.
 */
import type { Logger } from "pino";
import type { Clock } from "../base/clock.js";
import type { UpstreamConfig } from "../config/upstream-schema.js";
import type { UpstreamErrorReason } from "../base/results.js";
import type { UpstreamPoolMetrics } from "../observability/upstream-metrics.js";
import type { Counter } from "prom-client";
import { admissionFor, type Admission } from "./admission.js";
import { InFlightLedger } from "./in-flight-ledger.js";
import { compileHashOn, type HashOn } from "./hash-key.js";
import type { UpstreamSnapshot } from "./upstream-snapshot.js";
import { createBalancer, type Balancer } from "./balancing/balancer.js";
import { OutlierDetector } from "./balancing/outlier-detector.js";
import { PanicRouting } from "./panic-routing.js";
import { RetryBudget } from "./retry-budget.js";
import { endpointsFor, type Endpoint } from "./endpoint.js";
import type { EndpointAddress } from "./endpoint-address.js";

/** What an upstream reports to. */
export interface UpstreamDeps {
  metrics: { pool: UpstreamPoolMetrics; upstreamErrors: Counter<"upstream" | "reason"> };
  logger: Logger;
  /** Monotonic time (tries, outlier ejections, the adaptive limit) and jitter (retry backoff). */
  clock: Clock;
}

/** Statuses of the endpoint itself that count as a failed call (SPEC §16 outlier detection). */
const isGatewayFailure = (status: number): boolean => status === 502 || status === 503 || status === 504;

/** A proxied upstream and its endpoints. */
export class Upstream {
  readonly name: string;
  readonly endpoints: readonly Endpoint[];
  readonly balancerKind: UpstreamConfig["balancer"];
  /** The hash key's source with `consistent_hash`, else null (no key is computed). */
  readonly hashOn: HashOn | null;
  /** Null for one endpoint: nothing to choose. */
  private readonly balancer: Balancer | null;
  private readonly outliers: OutlierDetector | null;
  /**
   * The upstream a reload replaced this one with, or null: it owns the ejection of the endpoints it
   * took over, so the reports of this one's calls still in flight go to its detector.
   */
  private successor: Upstream | null = null;
  /** The upstream this one replaces, told it has a successor when this one's reload commits. */
  private predecessor: Upstream | null = null;
  /** Endpoints ejected now (their return is checked on pick only while there are some). */
  private ejectedCount = 0;
  /**
   * Admission under `max_in_flight` (SPEC §17) and `adaptive_concurrency` (SPEC §18), or null
   * without either; kept by a reload, set by {@link apply} when the configuration commits.
   */
  admission: Admission | null;
  /** Every count in flight, one per upstream name (handed to the upstream a reload makes). */
  readonly ledger: InFlightLedger;
  /** The retry budget (SPEC §17), reading {@link ledger}. */
  readonly budget: RetryBudget;
  private readonly panic: PanicRouting;

  /**
   * @param addresses - each endpoint's address and TLS settings (same order as its endpoints)
   * @param previous - the upstream of this name a reload replaces (SPEC §7): its endpoints kept by
   *   name at the same place with unchanged connections are taken over with their connections,
   *   calls in flight, health and ejection, and so is its admission (its calls in flight still
   *   count); the live settings of {@link apply} are not touched before the reload commits
   */
  constructor(
    name: string,
    cfg: UpstreamConfig,
    addresses: readonly EndpointAddress[],
    private readonly deps: UpstreamDeps,
    previous?: Upstream,
  ) {
    this.name = name;
    this.balancerKind = cfg.balancer;
    const pool = deps.metrics.pool;
    const taken: number[] = [];
    this.endpoints = endpointsFor(name, cfg, addresses, pool, previous?.endpoints ?? [], taken);
    this.hashOn = cfg.balancer === "consistent_hash" ? compileHashOn(cfg.hash_on ?? "identity") : null;
    this.balancer =
      this.endpoints.length > 1
        ? createBalancer(cfg.balancer, this.endpoints, undefined, deps.clock.random())
        : null;
    const o = cfg.outlier_detection;
    this.outliers =
      this.endpoints.length > 1 && o.consecutive_failures > 0
        ? new OutlierDetector(
            this.endpoints,
            {
              consecutiveFailures: o.consecutive_failures,
              baseEjectionMs: o.base_ejection_ms,
              maxEjectionPercent: o.max_ejection_percent,
            },
            deps.clock,
            (i: number, ejected: boolean) => this.ejectionChanged(i, ejected),
          )
        : null;
    for (const i of taken) this.takeOver(i, previous!);
    this.panic = new PanicRouting(name, pool.panic.labels({ upstream: name }), deps.logger);
    this.ledger = previous?.ledger ?? new InFlightLedger();
    this.admission = admissionFor(cfg, previous?.admission ?? null, this.admissionDeps(), false);
    this.budget = new RetryBudget(name, cfg, this.ledger, pool.retries);
  }

  /**
   * Applies the per-call settings when their configuration commits (never while it is only
   * prepared): `timeout_ms`, `max_in_flight`, `adaptive_concurrency`, `retry_budget`; admitted
   * calls stay counted, and a replaced upstream learns its successor. (`load_shedding` is read
   * at admission from the runtime the call runs on.)
   */
  apply(cfg: UpstreamConfig): void {
    if (this.predecessor !== null) this.predecessor.successor = this;
    this.predecessor = null;
    for (const e of this.endpoints) {
      e.timeouts.timeoutMs = cfg.timeout_ms;
      e.timeouts.connectTimeoutMs = cfg.connect_timeout_ms;
    }
    this.budget.configure(cfg);
    this.admission = admissionFor(cfg, this.admission, this.admissionDeps(), true);
  }

  /**
   * The endpoint for a retry: another available one than `previous` when the upstream has one,
   * else the balancer's pick (an upstream of one endpoint retries that endpoint).
   */
  pickOther(previous: Endpoint, key: string | undefined): Endpoint {
    const first = this.pick(key);
    if (first !== previous || this.endpoints.length === 1) return first;
    for (let n = 0; n < this.endpoints.length; n++) {
      const e = this.endpoints[(previous.index + 1 + n) % this.endpoints.length]!;
      if (e !== previous && e.available) return e;
    }
    return first;
  }

  /**
   * The endpoint for one call: the balancer's pick among the available ones, or, when none is
   * available, among all of them (panic routing, counted).
   * @param key - the hash key (`consistent_hash`), else undefined
   */
  pick(key: string | undefined): Endpoint {
    const balancer = this.balancer;
    if (balancer === null) {
      const only = this.endpoints[0]!;
      if (!only.available) this.panic.picked();
      else if (this.panic.active) this.panic.ended();
      return only;
    }
    if (this.ejectedCount > 0) this.refreshEjections();
    let i = balancer.pick(key, false);
    if (i < 0) {
      this.panic.picked();
      i = balancer.pick(key, true);
    } else if (this.panic.active) this.panic.ended();
    return this.endpoints[i]!;
  }

  /** The gateway's clock: a try's start and time to head, its retry's backoff jitter. */
  get clock(): Clock {
    return this.deps.clock;
  }

  /**
   * The endpoint answered a try with `status`: its time to head is observed, and a 502/503/504 of
   * its own is a failed call.
   * @param startedMs - when the try was sent ({@link nowMs})
   */
  answered(endpoint: Endpoint, status: number, startedMs: number): void {
    endpoint.metrics.duration.observe((this.deps.clock.monotonicMs() - startedMs) / 1000);
    const o = this.outliersOf(endpoint);
    if (o === null) return;
    if (isGatewayFailure(status)) o.failure(endpoint.index);
    else o.success(endpoint.index);
  }

  /** The call to `endpoint` failed before or during its answer. */
  failed(endpoint: Endpoint, reason: UpstreamErrorReason): void {
    this.deps.metrics.upstreamErrors.inc({ upstream: this.name, reason });
    endpoint.metrics.errors[reason].inc();
    this.outliersOf(endpoint)?.failure(endpoint.index);
  }

  /**
   * The active health state of one endpoint changed (this process's probes, or the cluster
   * primary's, which log the change once). Unknown endpoint names are ignored (a configuration
   * that changed meanwhile).
   */
  setHealthy(endpointName: string, healthy: boolean): void {
    const e = this.endpoints.find((x) => x.name === endpointName);
    if (e === undefined || e.healthy === healthy) return;
    e.healthy = healthy;
    // SPEC §16: an ejected endpoint that then failed its probes was down, and is back once they
    // pass again, whatever remains of its ejection (one whose probes kept passing serves it out).
    if (healthy && e.ejected) this.outliers?.forgive(e.index);
    e.available = healthy && !e.ejected;
    if (e.available) this.panic.ended();
  }

  /** `GET /upstreams`' view of this upstream. */
  snapshot(): UpstreamSnapshot {
    this.refreshEjections();
    return {
      balancer: this.balancerKind,
      concurrency_limit: this.admission === null ? null : this.admission.limit,
      in_flight: this.ledger.callsAdmitted,
      endpoints: this.endpoints.map((e) => ({
        endpoint: e.name,
        url: e.url,
        weight: e.weight,
        healthy: e.healthy,
        ejected: e.ejected,
        in_flight: e.inFlight,
      })),
    };
  }

  /** Closes every endpoint's connections. */
  close(): void {
    for (const e of this.endpoints) e.close();
  }

  /**
   * Ends the ejections whose time is up (their `onChange` makes the endpoints available): on every
   * pick while some endpoint is ejected, and before the state is read (metrics, admin).
   */
  refreshEjections(): void {
    const o = this.outliers;
    if (o === null || this.ejectedCount === 0) return;
    if (this.deps.clock.monotonicMs() >= o.nextUnejectionAt()) o.refresh();
  }

  private admissionDeps(): Parameters<typeof admissionFor>[2] {
    const { clock, metrics } = this.deps;
    return { upstream: this.name, ledger: this.ledger, clock, overloaded: metrics.pool.overloaded };
  }

  /** The detector that owns `e`'s ejection: this upstream's, or its successor's once it took `e` over. */
  private outliersOf(e: Endpoint): OutlierDetector | null {
    const next = this.successor;
    if (next === null) return this.outliers;
    return next.endpoints[e.index] === e ? next.outliersOf(e) : null;
  }

  /** Endpoint `i`, taken over from `previous`, keeps its ejection (its detector's state). */
  private takeOver(i: number, previous: Upstream): void {
    this.predecessor = previous; // never written into the live upstream before the reload commits
    const e = this.endpoints[i]!;
    if (this.outliers !== null && previous.outliers !== null) this.outliers.carry(i, previous.outliers);
    else if (e.ejected) {
      // No detector to end it here: the ejection ends with the configuration that had one.
      e.ejected = false;
      e.available = e.healthy;
    }
    if (e.ejected) this.ejectedCount++;
  }

  private ejectionChanged(i: number, ejected: boolean): void {
    const e = this.endpoints[i]!;
    if (e.ejected === ejected) return;
    e.ejected = ejected;
    e.available = e.healthy && !ejected;
    if (e.available) this.panic.ended();
    this.ejectedCount += ejected ? 1 : -1;
    if (ejected) {
      this.deps.metrics.pool.ejections.inc({ upstream: this.name, endpoint: e.name });
      this.deps.logger.warn(
        { upstream: this.name, endpoint: e.name },
        "upstream endpoint ejected: consecutive failures",
      );
    } else {
      this.deps.logger.info(
        { upstream: this.name, endpoint: e.name },
        "upstream endpoint back from ejection",
      );
    }
  }
}
