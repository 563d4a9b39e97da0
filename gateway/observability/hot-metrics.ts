/**
 * The request path's metric updates, on children looked up once per label set and kept in nested
 * maps (no key string built per request). Label sets are bounded (config names × fixed
 * enumerations × status codes).
 */
import type { HotCount, HotDistribution } from "./hot-families.js";
import type { AuthResult, DecisionOutcome } from "../base/results.js";
import type { GatewayMetrics } from "./metrics.js";

interface RequestChildren {
  count: HotCount;
  duration: HotDistribution;
}

/** `outer.get(key)`, created empty on first use. */
function inner<K, K2, V>(outer: Map<K, Map<K2, V>>, key: K): Map<K2, V> {
  let v = outer.get(key);
  if (v === undefined) {
    v = new Map();
    outer.set(key, v);
  }
  return v;
}

/** The hot-path view of {@link GatewayMetrics}. */
export class HotMetrics {
  /** route → class → status code. */
  private readonly requests = new Map<string, Map<string, Map<number, RequestChildren>>>();
  /** class → plan → outcome → window. */
  private readonly decisions = new Map<string, Map<string, Map<DecisionOutcome, Map<string, HotCount>>>>();
  private readonly auth = new Map<AuthResult, HotCount>();
  private readonly upstreams = new Map<string, HotDistribution>();
  /** class → kind (SPEC §22 units). */
  private readonly units = new Map<string, Map<"cost" | "charge", HotCount>>();

  constructor(private readonly m: GatewayMetrics) {}

  /** One finished request. @param seconds - duration (s) */
  request(route: string, cls: string, status: number, seconds: number): void {
    const byStatus = inner(inner(this.requests, route), cls);
    let c = byStatus.get(status);
    if (c === undefined) {
      c = {
        count: this.m.requests.labels({ route, class: cls, code: status }),
        duration: this.m.requestDuration.labels({ route, class: cls }),
      };
      byStatus.set(status, c);
    }
    c.count.inc();
    c.duration.observe(seconds);
  }

  /**
   * One rate-limit decision.
   * @param plan - a configured plan's name, or `none`
   * @param window - the refusing window's name (`month`, `60s`), or `none` for an admitted call
   */
  decision(cls: string, plan: string, outcome: DecisionOutcome, window: string): void {
    const byWindow = inner(inner(inner(this.decisions, cls), plan), outcome);
    let c = byWindow.get(window);
    if (c === undefined) {
      c = this.m.ratelimitDecisions.labels({ class: cls, plan, outcome, window });
      byWindow.set(window, c);
    }
    c.inc();
  }

  /** Units spent (SPEC §22): an admitted call's `cost`, or an answer's `charge`. */
  unitsSpent(cls: string, kind: "cost" | "charge", units: number): void {
    const byKind = inner(this.units, cls);
    let c = byKind.get(kind);
    if (c === undefined) {
      c = this.m.ratelimitUnits.labels({ class: cls, kind });
      byKind.set(kind, c);
    }
    c.inc(units);
  }

  /** An answer of a `charge` class without a usable charge header (SPEC §22). */
  chargeInvalid(cls: string): void {
    this.m.chargeInvalid.inc({ class: cls });
  }

  /** A plan claim that named no configured plan (SPEC §10). */
  planClaimUnknown(): void {
    this.m.planClaimUnknown.inc();
  }

  /** One authentication result. */
  authResult(result: AuthResult): void {
    let c = this.auth.get(result);
    if (c === undefined) {
      c = this.m.authResults.labels({ result });
      this.auth.set(result, c);
    }
    c.inc();
  }

  /** Upstream time to response head. @param seconds - duration (s) */
  upstream(upstream: string, seconds: number): void {
    let c = this.upstreams.get(upstream);
    if (c === undefined) {
      c = this.m.upstreamDuration.labels({ upstream });
      this.upstreams.set(upstream, c);
    }
    c.observe(seconds);
  }
}
