/**
 * The arguments of one limiter script call (`lua/sliding_window.lua` documents their layout): one
 * flat array, as ioredis's `Command` takes it, built without intermediate arrays.
 */
import type { BudgetKeys, CountMode, LimitPolicy } from "./limiter.js";
import type { ScriptPlan } from "./lua-scripts.js";
import { callKey } from "./storage-keys.js";

/** Script mode flag (ARGV[1]) of each count mode. */
const MODE_FLAG: Readonly<Record<CountMode, string>> = Object.freeze({ count: "1", peek: "0", charge: "2" });

/**
 * The window pairs (`limit, windowMs`) a call sends: the identity's own (the plan's), all flat
 * windows, or those of the budgets the call belongs to (SPEC §22).
 * @param indexes - the call's flat window indexes ({@link callIndexes}), or null without budgets
 */
export function callWindowArgs(
  plan: ScriptPlan,
  indexes: readonly number[] | null,
): readonly (number | string)[] {
  if (indexes === null || indexes.length === plan.keySuffixes.length) return plan.windowArgs;
  if (indexes.length === plan.flatArgs.length / 2) return plan.flatArgs;
  const out: (number | string)[] = [];
  for (const i of indexes) out.push(plan.flatArgs[2 * i]!, plan.flatArgs[2 * i + 1]!);
  return out;
}

/**
 * `EVALSHA`'s arguments: `sha, numkeys, KEYS (windows, then top-caller sets), mode, nonce, cost,
 * units, window pairs, top-caller member` (the member only when the sets are KEYS, SPEC §21).
 * `args[1]` is the number of keys.
 * @param prefix - the store's key prefix with its separator
 * @param indexes - the call's flat window indexes, or null without budgets
 * @param nonce - a sliding_log count's unique member, else ""
 */
export function scriptArgs(
  plan: ScriptPlan,
  sha: string,
  prefix: string,
  key: string,
  policy: LimitPolicy,
  mode: CountMode,
  budgets: BudgetKeys | null,
  indexes: readonly number[] | null,
  units: number,
  nonce: string,
): (string | number)[] {
  const args: (string | number)[] = [sha, 0];
  if (indexes === null || indexes.length === plan.keySuffixes.length) {
    const base = `${prefix}{${key}}`;
    for (const suffix of plan.keySuffixes) args.push(base + suffix);
  } else {
    for (const i of indexes) args.push(callKey(prefix, key, policy, budgets, i));
  }
  const member = plan.topKeys.length !== 0 && mode !== "peek";
  if (member) for (const k of plan.topKeys) args.push(k);
  args[1] = args.length - 2;
  args.push(MODE_FLAG[mode], nonce, plan.cost, units);
  for (const a of callWindowArgs(plan, indexes)) args.push(a);
  if (member) args.push(key);
  return args;
}
