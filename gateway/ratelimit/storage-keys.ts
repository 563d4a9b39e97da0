/**
 * The one storage-key function of both stores (SPEC §4, §10): a window's counts belong to the
 * identity (with its kind), the class name, the window length and the algorithm — never to a plan
 * or a limit — so a caller whose limits change (plan, reload) keeps what it has spent, in memory
 * exactly as in Redis.
 *
 * Layout: `<prefix>{<identityKey>}:<class>:<window_s>` plus `:log` for `sliding_log`, and
 * `<prefix>{<identityKey>}:<class>:<period>` for a calendar window (SPEC §19: `:read:month`,
 * whatever the algorithm: its counter is one hash either way). The braces are a Redis Cluster hash
 * tag: every key of one identity lands in one slot, so one call touches one slot. The `:log`
 * suffix keeps the two algorithms' keys apart, so a reload that switches a class's algorithm never
 * meets a key of the other Redis type (WRONGTYPE). The offset a calendar window is aligned to is
 * not in its key: the counter remembers its period's start, so periods of another offset start
 * from zero.
 *
 * Budgets (SPEC §22): a budget's windows are keyed by its storage identity `claim:<name>:<value>`
 * (`budgetKeysOf`), a kind no identity has, so a budget never shares a key with a caller. The keys
 * of one call must share one Cluster slot, and an organisation's budget is shared by many callers:
 * so when a call belongs to a budget, every key of that call takes the hash tag of the first
 * budget it belongs to — the budget's own keys `<prefix>{claim:org_id:acme}:<class>:<window>`, the
 * caller's `<prefix>{claim:org_id:acme}sub:alice:<class>:<window>`, a second budget's
 * `<prefix>{claim:org_id:acme}claim:team_id:red:<class>:<window>`. A call that belongs to no
 * budget (no budgets configured, or a token without the claims) keeps the keys above. Hence a
 * caller's own counts in a class with budgets are per (first) budget value: a user who moves to
 * another organisation, or whose token loses the claim, starts that class's own windows afresh,
 * and a second budget (a team) is counted per value of the first (the organisation it is part of).
 */
import type { BudgetKeys, LimitPolicy, WindowSpec } from "./limiter.js";

/** Per-policy key tails, built once per policy object. */
const suffixCache = new WeakMap<LimitPolicy, readonly string[]>();

/**
 * The key tails of a policy's windows, after the identity's hash tag: `:<class>:<window_s>[:log]`,
 * or `:<class>:<period>` for a calendar window.
 * @returns one entry per window, cached per policy object (policies are frozen, built at load)
 */
export function windowSuffixes(policy: LimitPolicy): readonly string[] {
  let s = suffixCache.get(policy);
  if (s === undefined) {
    const log = policy.algorithm === "sliding_log" ? ":log" : "";
    s = policy.windows.map((w) =>
      w.period === undefined ? `:${policy.className}:${w.windowS}${log}` : `:${policy.className}:${w.period}`,
    );
    suffixCache.set(policy, s);
  }
  return s;
}

/**
 * The storage key of one window.
 * @param prefix - store prefix including its separator (`rl:` for Redis, `""` in memory)
 * @param identityKey - identity with its kind, e.g. `sub:alice`
 * @param windowIndex - index in `policy.windows`
 */
export function windowKey(
  prefix: string,
  identityKey: string,
  policy: LimitPolicy,
  windowIndex: number,
): string {
  return `${prefix}{${identityKey}}${windowSuffixes(policy)[windowIndex]!}`;
}

/**
 * A policy's windows as one flat list (SPEC §22): its own windows, then each budget's in order;
 * the index space of `Decision.windowIndex`. Built once per policy object.
 */
export interface FlatWindows {
  windows: readonly WindowSpec[];
  /** Key tail per flat window (as {@link windowSuffixes}). */
  suffixes: readonly string[];
  /** Level per flat window: 0 the identity's own, j + 1 the budget `policy.budgets[j]`. */
  levels: readonly number[];
  /** Flat indexes of the identity's own windows (a call that belongs to no budget). */
  own: readonly number[];
  /** Every flat index (a call that belongs to every budget). */
  all: readonly number[];
}

const flatCache = new WeakMap<LimitPolicy, FlatWindows>();

/** The flat window list of `policy` ({@link FlatWindows}), cached per policy object. */
export function flatWindows(policy: LimitPolicy): FlatWindows {
  let f = flatCache.get(policy);
  if (f === undefined) {
    const log = policy.algorithm === "sliding_log" ? ":log" : "";
    const windows: WindowSpec[] = [...policy.windows];
    const levels: number[] = policy.windows.map(() => 0);
    (policy.budgets ?? []).forEach((b, j) => {
      for (const w of b.windows) {
        windows.push(w);
        levels.push(j + 1);
      }
    });
    const suffixes = windows.map((w) =>
      w.period === undefined ? `:${policy.className}:${w.windowS}${log}` : `:${policy.className}:${w.period}`,
    );
    f = Object.freeze({
      windows,
      suffixes,
      levels,
      own: policy.windows.map((_, i) => i),
      all: windows.map((_, i) => i),
    });
    flatCache.set(policy, f);
  }
  return f;
}

/**
 * The flat indexes one call counts in: its own windows, and those of every budget it belongs to.
 * @param budgets - per budget, its storage identity or null (SPEC §22); null without budgets
 * @param f - `flatWindows(policy)`, when the caller has it
 */
export function callIndexes(
  policy: LimitPolicy,
  budgets: BudgetKeys | null | undefined,
  f: FlatWindows = flatWindows(policy),
): readonly number[] {
  if (budgets === null || budgets === undefined) return f.own;
  let present = 0;
  for (const b of budgets) if (b !== null) present++;
  if (present === 0) return f.own;
  if (present === budgets.length) return f.all;
  return f.all.filter((i) => f.levels[i] === 0 || budgets[f.levels[i]! - 1] !== null);
}

/**
 * The storage key of flat window `index` for one call (the layout above): tagged by the first
 * budget the call belongs to, else by the identity.
 * @param prefix - store prefix including its separator (`rl:` for Redis, `""` in memory)
 * @param budgets - per budget, its storage identity or null; null without budgets
 * @param f - `flatWindows(policy)`, when the caller has it
 */
export function callKey(
  prefix: string,
  identityKey: string,
  policy: LimitPolicy,
  budgets: BudgetKeys | null | undefined,
  index: number,
  f: FlatWindows = flatWindows(policy),
): string {
  const tag = budgets === null || budgets === undefined ? null : firstBudget(budgets);
  if (tag === null) return `${prefix}{${identityKey}}${f.suffixes[index]!}`;
  const level = f.levels[index]!;
  const owner = level === 0 ? identityKey : budgets![level - 1]!;
  return `${prefix}{${tag}}${owner === tag ? "" : owner}${f.suffixes[index]!}`;
}

function firstBudget(budgets: BudgetKeys): string | null {
  for (const b of budgets) if (b !== null) return b;
  return null;
}
