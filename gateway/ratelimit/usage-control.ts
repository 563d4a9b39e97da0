/**
 * One process's side of usage operations (SPEC §21): the overrides it applies, the changes it makes
 * through the store, and the changes other replicas made, learnt by polling the store's change
 * counter every {@link UsageControlOptions.intervalMs} off the request path. A change (a reset, an
 * override set or removed) also drops what the rejection cache remembers of that identity, so a
 * replica that was answering its over-limit calls locally asks the store again: within one
 * interval plus a round trip on the other replicas, at once on the one that made it. Polling runs
 * only while usage operations are enabled (`admin.token_file`, {@link UsageControl.enable}).
 */
import type { Logger } from "pino";
import type { AdminStore } from "./admin-store.js";
import type { Override, Overrides } from "./overrides.js";

/** What forgets an identity's remembered refusals (`RejectionCache.forget`). */
export interface Forgetful {
  /** @param identity - a storage identity, or null for every identity */
  forget(identity: string | null): void;
}

/** Options of {@link UsageControl}. */
export interface UsageControlOptions {
  store: AdminStore;
  /** The registry (a memory store's admin side writes into it too). */
  overrides: Overrides;
  /** The rejection cache in front of a shared store, or null. */
  cache: Forgetful | null;
  logger: Logger;
  /** Time between two polls of a shared store (ms). @default 400 */
  intervalMs?: number;
}

/** Usage operations of one process, over its limit store. */
export class UsageControl {
  readonly overrides: Overrides;
  private readonly store: AdminStore;
  private readonly cache: Forgetful | null;
  private readonly logger: Logger;
  private readonly intervalMs: number;
  /** The store's change counter as last applied here; -1 before the first poll. */
  private version = -1;
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  /** Raised by each change made here: a poll that was under way meanwhile is not applied. */
  private local = 0;

  constructor(o: UsageControlOptions) {
    this.store = o.store;
    this.overrides = o.overrides;
    this.cache = o.cache;
    this.logger = o.logger;
    this.intervalMs = o.intervalMs ?? 400;
  }

  /**
   * Turns usage operations on or off (`admin.token_file` set or not): on, a shared store is polled
   * (the first poll loads the overrides it holds); off, it is not, and its overrides do not apply
   * (a gateway without usage operations sends Redis nothing but its calls). A memory store's
   * overrides, held only here, are kept either way.
   */
  enable(on: boolean): void {
    if (!this.store.shared) return;
    if (on && this.timer === null) {
      this.timer = setInterval(() => void this.sync(), this.intervalMs);
      this.timer.unref();
      void this.sync();
    } else if (!on && this.timer !== null) {
      this.close();
      this.local++; // a poll under way is not applied
      this.version = -1;
      this.overrides.replace([]);
    }
  }

  /** Stops polling. */
  close(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Applies what changed in the store since the last poll (one poll at a time; a second call waits
   * for the one under way). Never rejects: a store that does not answer is asked again next time.
   */
  sync(): Promise<void> {
    this.polling ??= this.poll().finally(() => (this.polling = null));
    return this.polling;
  }

  /**
   * Sets (or with null removes) the override of `identity`, in the store and here.
   * @returns the override in force before, or null
   * @throws Error (as a rejection) when the store cannot answer
   */
  async setOverride(identity: string, next: Override | null): Promise<Override | null> {
    this.local++;
    const before = await this.store.setOverride(identity, next);
    if (next === null) this.overrides.delete(identity);
    else this.overrides.set(next);
    this.cache?.forget(identity);
    return before;
  }

  /**
   * Deletes an identity's counters (and its place among the top callers of `classes`) and makes
   * every replica forget its refusals.
   * @param keys - the counters' keys without the store prefix
   * @param classes - the classes reset
   * @throws Error (as a rejection) when the store cannot answer
   */
  async reset(identity: string, keys: readonly string[], classes: readonly string[]): Promise<void> {
    this.local++;
    await this.store.deleteKeys(identity, keys, classes);
    this.cache?.forget(identity);
  }

  /**
   * The keys that may hold `identity`'s windows as a member of a budget (`AdminStore.memberKeys`).
   * @throws Error (as a rejection) when the store cannot answer
   */
  memberKeys(identity: string): Promise<string[]> {
    return this.store.memberKeys(identity);
  }

  private async poll(): Promise<void> {
    const local = this.local;
    try {
      const news = await this.store.poll(this.version);
      // A change made here meanwhile is newer than this answer: the next poll reads it.
      if (news === null || local !== this.local) return;
      this.overrides.replace(news.overrides);
      if (news.identities === null) this.cache?.forget(null);
      else for (const id of news.identities) this.cache?.forget(id);
      this.version = news.version;
    } catch (err) {
      this.logger.debug({ err: { message: (err as Error).message } }, "usage changes poll failed");
    }
  }
}
