/**
 * Pre-bound label children for the metrics touched on every request. prom-client's
 * `inc({ labels })` hashes the label object on each call; a child bound once per label set
 * costs a Map lookup. Label sets are bounded (config names × fixed enumerations × status codes).
 */
import type { Counter, Histogram } from "prom-client";
import type { AuthResult, DecisionOutcome, GatewayMetrics } from "./metrics.js";

interface RequestChildren {
  count: Counter.Internal;
  duration: Histogram.Internal<"route" | "class">;
}

/** The hot-path view of {@link GatewayMetrics}. */
export class HotMetrics {
  private readonly requests = new Map<string, RequestChildren>();
  private readonly decisions = new Map<string, Counter.Internal>();
  private readonly auth = new Map<AuthResult, Counter.Internal>();
  private readonly upstreams = new Map<string, Histogram.Internal<"upstream">>();

  constructor(private readonly m: GatewayMetrics) {}

  /** One finished request. @param seconds - duration (s) */
  request(route: string, cls: string, status: number, seconds: number): void {
    const key = `${route}\n${cls}\n${status}`;
    let c = this.requests.get(key);
    if (c === undefined) {
      c = {
        count: this.m.requests.labels({ route, class: cls, code: status }),
        duration: this.m.requestDuration.labels({ route, class: cls }),
      };
      this.requests.set(key, c);
    }
    c.count.inc();
    c.duration.observe(seconds);
  }

  /**
   * One rate-limit decision.
   * @param plan - a configured plan's name, or `none`
   */
  decision(cls: string, plan: string, outcome: DecisionOutcome): void {
    const key = `${cls}\n${plan}\n${outcome}`;
    let c = this.decisions.get(key);
    if (c === undefined) {
      c = this.m.ratelimitDecisions.labels({ class: cls, plan, outcome });
      this.decisions.set(key, c);
    }
    c.inc();
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
