/**
 * Threshold notifications (SPEC §21): turns the crossings a limiter call reported
 * (`Decision.crossings`, found by the store in the call's own round trip and deduplicated there
 * across replicas) into one delivery per webhook that wants that threshold. Called on the request
 * path only when a call crossed something (once per identity, class, period and threshold), and
 * then only builds a small JSON body and queues it (`delivery-queue.ts`).
 *
 * Body: `{"type":"usage.threshold","identity":"sub:alice","plan":"pro","class":"read",
 * "window":{"limit":100000,"period":"month"},"threshold":0.8,"used":80000,"remaining":20000,
 * "reset":EPOCH_S,"time":"<RFC 3339>"}`; a budget's window (SPEC §22) names the budget's storage
 * identity (`claim:org_id:acme`). `time` and `reset` come from the limiter's clock (Redis TIME).
 */
import { periodBounds } from "../calendar.js";
import type { BudgetKeys, Decision } from "../limiter.js";
import type { ResolvedPolicy } from "../policy.js";
import { flatWindows } from "../storage-keys.js";
import type { DeliveryQueue } from "./delivery-queue.js";
import type { WebhookTarget } from "./webhooks.js";

/** The notifier of one configuration; its queue outlives it (kept by the next configuration). */
export class ThresholdNotifier {
  /**
   * @param targets - this configuration's webhooks (`loadWebhooks`)
   * @param queue - the gateway's delivery queue
   */
  constructor(
    readonly targets: readonly WebhookTarget[],
    readonly queue: DeliveryQueue,
  ) {}

  /**
   * Queues the deliveries of `d.crossings`; nothing for a decision of the fail-open fallback
   * (counts of one replica, nothing deduplicated across replicas).
   * @param identityKey - the caller's storage identity (`sub:alice`)
   * @param budgets - the call's budgets (SPEC §22), or null
   */
  notify(identityKey: string, policy: ResolvedPolicy, budgets: BudgetKeys | null, d: Decision): void {
    const crossings = d.crossings;
    if (crossings === undefined || d.degraded) return;
    const flat = flatWindows(policy);
    for (const c of crossings) {
      const w = flat.windows[c.windowIndex];
      if (w === undefined || w.period === undefined) continue;
      const level = flat.levels[c.windowIndex]!;
      const identity = level === 0 ? identityKey : budgets?.[level - 1];
      if (identity === undefined || identity === null) continue;
      const resetMs = periodBounds(d.nowMs, w.period, w.offsetMs, { startMs: 0, endMs: 0 }).endMs;
      const body = JSON.stringify({
        type: "usage.threshold",
        identity,
        plan: policy.plan,
        class: policy.className,
        window: { limit: w.limit, period: w.period },
        threshold: c.threshold,
        used: c.used,
        remaining: Math.max(0, w.limit - c.used),
        reset: Math.ceil(resetMs / 1000),
        time: new Date(d.nowMs).toISOString(),
      });
      for (const t of this.targets) {
        if (!t.thresholds.has(c.threshold)) continue;
        this.queue.enqueue({ url: t.url, body, secret: t.secret, timeoutMs: t.timeoutMs });
      }
    }
  }
}
