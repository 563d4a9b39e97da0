/**
 * A configuration's `load_shedding` block (SPEC §18), compiled once per load and read at each
 * admission from the runtime the call runs on: so a reload's priorities and shares apply to the
 * calls admitted after it commits, and a reload that is prepared and then aborted changes nothing.
 */
import type { LoadSheddingConfig, Priority } from "../config/shedding-schema.js";

const WHOLE: Readonly<Record<Priority, number>> = Object.freeze({ critical: 1, default: 1, sheddable: 1 });

/** Each plan's priority and each priority's share of an upstream's concurrency limit. */
export class SheddingPolicy {
  /**
   * The share of the limit a call of each priority may fill (every share 1 without a
   * `load_shedding` block: every call may fill the whole limit, SPEC §17).
   */
  readonly shares: Readonly<Record<Priority, number>>;
  private readonly priorities: ReadonlyMap<string, Priority>;

  /** @param cfg - the `load_shedding` block, or undefined without one */
  constructor(cfg: LoadSheddingConfig | undefined) {
    this.shares = cfg === undefined ? WHOLE : Object.freeze({ ...cfg.shares });
    this.priorities = new Map(Object.entries(cfg?.priorities ?? {}));
  }

  /** A caller's priority: its plan's, `default` without a plan or for an unlisted one. */
  priorityOf(plan: string | null): Priority {
    return (plan === null ? undefined : this.priorities.get(plan)) ?? "default";
  }
}
