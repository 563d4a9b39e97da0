/**
 * Where usage operations (SPEC §21) keep what must outlive a call: the overrides, and the news of
 * each change for the other replicas. Two implementations: in this process (the memory store:
 * nothing to share) and in Redis (`redis-admin-store.ts`: a hash of overrides, a change counter
 * and a short list of changes, polled by every replica off the request path).
 */
import type { MemoryStore } from "./memory-store.js";
import type { Override, Overrides } from "./overrides.js";

/** What changed since a version, as a replica learns it ({@link AdminStore.poll}). */
export interface AdminNews {
  /** The store's change counter now. */
  version: number;
  /**
   * The identities whose counts were reset or whose override changed since the version asked
   * about, or null when that is not known (too many changes, a restarted store): forget them all.
   */
  identities: string[] | null;
  /** Every override the store holds (expired ones dropped). */
  overrides: Override[];
}

/** A limit store's side for usage operations. */
export interface AdminStore {
  /** True when other replicas share the store (they learn of changes by {@link poll}). */
  readonly shared: boolean;
  /**
   * Stores (or, with `next` null, removes) the override of `identity` and announces the change.
   * @returns the override it replaced, or null
   * @throws Error (as a rejection) when the store cannot answer
   */
  setOverride(identity: string, next: Override | null): Promise<Override | null>;
  /**
   * Deletes every key in `keys` (one identity's, so one Cluster slot) at once, drops `identity`
   * from the top-caller sets of `classes` (every period), then announces a reset of `identity`.
   * @param keys - without the store's prefix (`{sub:alice}:read:60`)
   * @param classes - the classes reset
   * @throws Error (as a rejection) when the store cannot answer
   */
  deleteKeys(identity: string, keys: readonly string[], classes: readonly string[]): Promise<void>;
  /** The news since `version` (-1: everything), or null when nothing changed. */
  poll(version: number): Promise<AdminNews | null>;
  /**
   * The keys (without the prefix) that may hold `identity`'s own windows counted as a member of a
   * budget (SPEC §22: `{claim:org_id:acme}sub:alice:read:60`, under the budget's hash tag): every
   * key whose tag is a budget's and whose rest starts with the identity. The caller keeps those
   * whose rest is exactly the identity and one of its windows.
   * @throws Error (as a rejection) when the store cannot answer
   */
  memberKeys(identity: string): Promise<string[]>;
}

/** True when `key` is `{claim:...}<identity><suffix>` for one of `suffixes`. */
export function isMemberKey(key: string, identity: string, suffixes: ReadonlySet<string>): boolean {
  if (!key.startsWith("{claim:")) return false;
  const rest = key.slice(key.indexOf("}") + 1);
  return rest.startsWith(identity) && suffixes.has(rest.slice(identity.length));
}

/** The memory store's side: the registry is the only copy, counts live in the store. */
export class MemoryAdminStore implements AdminStore {
  readonly shared = false;

  constructor(
    private readonly overrides: Overrides,
    private readonly store: MemoryStore,
    private readonly nowMs: () => number,
  ) {}

  setOverride(identity: string, next: Override | null): Promise<Override | null> {
    const before = this.overrides.get(identity, this.nowMs()) ?? null;
    if (next === null) this.overrides.delete(identity);
    else this.overrides.set(next);
    return Promise.resolve(before);
  }

  deleteKeys(identity: string, keys: readonly string[], classes: readonly string[]): Promise<void> {
    const drop = new Set(keys);
    this.store.forgetWhere((k) => drop.has(k));
    this.store.usage.forget(identity, keys, classes);
    return Promise.resolve();
  }

  poll(): Promise<AdminNews | null> {
    return Promise.resolve(null);
  }

  memberKeys(identity: string): Promise<string[]> {
    return Promise.resolve(
      this.store.forgetWhere(
        (k) => k.startsWith("{claim:") && k.slice(k.indexOf("}") + 1).startsWith(identity),
        true,
      ),
    );
  }
}
