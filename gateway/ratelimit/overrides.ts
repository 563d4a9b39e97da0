/**
 * Per-identity overrides of a class's windows (SPEC §21), as every replica holds them: a map from
 * storage identity (`sub:alice`) to the windows that replace, for that identity, those of the
 * classes the override names, ahead of consumers and plans. The limit store keeps the overrides
 * (`admin-store.ts`); this registry is each process's copy, refreshed by `admin-sync.ts`, so the
 * hot path applies them with one map lookup and no round trip.
 *
 * An override's policy is compiled once per (override, base policy) and kept: the rejection cache
 * answers only for the very policy object it decided for, so a new or removed override always
 * reaches the store on the identity's next call. Counts belong to the identity, class and window
 * length, never to a limit (SPEC §10), so raising a limit credits the caller at once.
 */
import type { GatewayConfig } from "../config/schema.js";
import { resolvePolicy, windowsOf, type PolicyExtras, type ResolvedPolicy } from "./policy.js";

/** The windows of one class as the file spells them (`{ limit, window_s }` or `{ limit, period }`). */
export type WindowsInput = GatewayConfig["rate_limits"]["anonymous"]["windows"];

/** One override as stored and served (`GET /overrides/<identity>`). */
export interface Override {
  /** The storage identity, `sub:alice`. */
  readonly identity: string;
  /** By class name, the windows that replace the class's for this identity. */
  readonly classes: Readonly<Record<string, WindowsInput>>;
  /** When it ends (epoch s), or null: until deleted. */
  readonly expires_at: number | null;
}

/** An override and its compiled policies, by the base policy they replace. */
interface Entry {
  readonly override: Override;
  readonly compiled: WeakMap<ResolvedPolicy, ResolvedPolicy>;
}

/** The overrides one process applies. */
export class Overrides {
  private readonly byIdentity = new Map<string, Entry>();

  /** Number of overrides held (expired ones included until the next refresh). */
  get size(): number {
    return this.byIdentity.size;
  }

  /** The override of `identity` in force at `nowMs` (epoch ms), or undefined. */
  get(identity: string, nowMs: number): Override | undefined {
    const e = this.byIdentity.get(identity);
    return e === undefined || expired(e.override, nowMs) ? undefined : e.override;
  }

  /** Every override in force at `nowMs` (epoch ms), by identity. */
  list(nowMs: number): Override[] {
    return [...this.byIdentity.values()].map((e) => e.override).filter((o) => !expired(o, nowMs));
  }

  /** Sets (or replaces) one override. */
  set(o: Override): void {
    this.byIdentity.set(o.identity, { override: o, compiled: new WeakMap() });
  }

  /** Removes the override of `identity`; true when there was one. */
  delete(identity: string): boolean {
    return this.byIdentity.delete(identity);
  }

  /**
   * Replaces every override with `all` (the store's list), keeping the compiled policies of those
   * that did not change, so a refresh alone never sends a caller's next call to the store.
   */
  replace(all: readonly Override[]): void {
    const next = new Map<string, Entry>();
    for (const o of all) {
      const before = this.byIdentity.get(o.identity);
      next.set(o.identity, before !== undefined && sameOverride(before.override, o) ? before : entry(o));
    }
    this.byIdentity.clear();
    for (const [k, v] of next) this.byIdentity.set(k, v);
  }

  /**
   * The policy a call of `identity` counts under: `policy` itself, or the override's windows in its
   * place (same class, algorithm, mode, plan label, budgets and cost) while the override is in force.
   * @param clock - the wall clock (read only for an identity with an override, which ends at its
   *   `expires_at`)
   * @param offsetMs - `rate_limits.quota_utc_offset` (ms east of UTC), for calendar windows
   */
  apply(
    policy: ResolvedPolicy,
    identity: string,
    clock: { nowMs(): number },
    offsetMs: number,
  ): ResolvedPolicy {
    if (this.byIdentity.size === 0) return policy;
    const e = this.byIdentity.get(identity);
    if (e === undefined) return policy;
    const windows = e.override.classes[policy.className];
    if (windows === undefined || expired(e.override, clock.nowMs())) return policy;
    let p = e.compiled.get(policy);
    if (p === undefined) {
      p = resolvePolicy(
        policy.className,
        policy.algorithm,
        policy.mode,
        windowsOf(windows, offsetMs),
        policy.identity,
        policy.ietfPolicy !== null,
        policy.plan,
        extrasOf(policy),
      );
      e.compiled.set(policy, p);
    }
    return p;
  }
}

/**
 * What `policy` adds to its windows, whole: the policy an override makes keeps its budgets, cost,
 * charge, thresholds and top callers (SPEC §21, §22), only its windows change.
 */
function extrasOf(policy: ResolvedPolicy): PolicyExtras {
  return {
    budgets: policy.budgets,
    cost: policy.cost,
    charge: policy.charge,
    ...(policy.thresholds === undefined ? {} : { thresholds: policy.thresholds }),
    ...(policy.topCallers === undefined ? {} : { topCallers: policy.topCallers }),
  };
}

function entry(o: Override): Entry {
  return { override: o, compiled: new WeakMap() };
}

function expired(o: Override, nowMs: number): boolean {
  return o.expires_at !== null && o.expires_at * 1000 <= nowMs;
}

function sameOverride(a: Override, b: Override): boolean {
  return a.expires_at === b.expires_at && JSON.stringify(a.classes) === JSON.stringify(b.classes);
}
