/**
 * Where a request's rate-limit decision is recorded (SPEC §3, §8): the class and policy charged,
 * the decision and the headers it gives on the scope, and the decision's metric. The core's steps
 * all record through here, so every answer carries the headers of the window it read or counted.
 * A call counts in the shared budgets on `scope.budgets` (SPEC §22) besides its own windows.
 */
import type { Logger } from "pino";
import type { HotMetrics } from "../observability/hot-metrics.js";
import type { DecisionOutcome } from "../base/results.js";
import { levelName } from "../ratelimit/budgets.js";
import { rateLimitHeaders } from "../ratelimit/headers.js";
import type { Decision } from "../ratelimit/limiter.js";
import type { ResolvedPolicy } from "../ratelimit/policy.js";
import type { RequestScope } from "./scope.js";

/** Records decisions of one gateway's requests. */
export class Decisions {
  constructor(
    private readonly hot: HotMetrics,
    private readonly logger: Logger,
  ) {}

  /** Consumes one call and records the decision; null when the store failed (`failure_mode: closed`). */
  async consume(scope: RequestScope, policy: ResolvedPolicy, key: string): Promise<Decision | null> {
    let decision: Decision;
    try {
      // The trace goes along: a store call that goes to the network is the request's child span.
      decision = await scope.runtime.limiter.limiter.consume(key, policy, scope.trace, scope.budgets);
    } catch (err) {
      this.logger.debug({ err, reqId: scope.requestId }, "limit store call failed");
      this.none(scope, policy);
      return null;
    }
    this.record(scope, policy, decision);
    return decision;
  }

  /**
   * Reads the window without counting (a CORS preflight, a call refused before the limiter) for
   * the answer's headers; without a decision when the store fails.
   */
  async peek(scope: RequestScope, policy: ResolvedPolicy, key: string): Promise<void> {
    try {
      const limiter = scope.runtime.limiter.limiter;
      this.use(scope, policy, await limiter.peek(key, policy, scope.trace, scope.budgets));
    } catch {
      this.none(scope, policy);
    }
  }

  /** The class charged, without a decision (the store failed). */
  none(scope: RequestScope, policy: ResolvedPolicy): void {
    scope.className = policy.className;
    scope.policy = policy;
  }

  /** A counted decision: on the scope, and in `gateway_ratelimit_decisions_total`. */
  record(scope: RequestScope, policy: ResolvedPolicy, decision: Decision): void {
    this.use(scope, policy, decision);
    const outcome: DecisionOutcome = decision.degraded
      ? "degraded"
      : decision.allowed
        ? "allowed"
        : policy.mode === "shadow"
          ? "shadow_limited"
          : "limited";
    const window = decision.allowed ? "none" : policy.windowNames[decision.windowIndex]!;
    this.hot.decision(policy.className, policy.plan ?? "none", outcome, window);
    // SPEC §22: units of classes that cost more than one or charge (nothing for the others).
    if (decision.allowed && (policy.cost > 1 || policy.charge !== null))
      this.hot.unitsSpent(policy.className, "cost", policy.cost);
  }

  /** A decision on the scope (and its headers), not counted in the metric. */
  use(scope: RequestScope, policy: ResolvedPolicy, decision: Decision): void {
    scope.className = policy.className;
    scope.policy = policy;
    scope.decision = decision;
    scope.headers = rateLimitHeaders(decision, policy, scope.budgets);
    if (decision.allowed) {
      scope.limitedBy = null;
      scope.limitingWindow = null;
    } else {
      scope.limitedBy = levelName(policy, decision.windowIndex);
      scope.limitingWindow = policy.windowNames[decision.windowIndex]!;
    }
  }
}
