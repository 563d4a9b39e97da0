/**
 * Usage operations in a process group (SPEC §21 with §15): the primary serves the admin listener
 * but holds no limit store, so it hands each `/usage` or `/overrides` call to one worker in turn
 * (they share Redis: `workers` > 1 requires it) and relays its answer. The worker checks the admin
 * token, counts the call in its metrics (summed by the primary's `/metrics`), writes the audit
 * line, and the other workers learn of the change as every replica does, by polling the store.
 */
import type { AdminAnswer, AdminCall } from "../server/usage-admin.js";
import { is, type Member } from "./member.js";

/** A worker that does not answer within this gets the call answered 503 (ms). */
const ANSWER_TIMEOUT_MS = 10_000;

const UNAVAILABLE: AdminAnswer = {
  status: 503,
  body: JSON.stringify({ error: { code: 503, message: "No worker is serving" } }),
  headers: {},
};

/**
 * @param members - the workers serving now
 * @param nextId - a fresh exchange id for a question to a worker
 * @returns the admin listener's usage handler for the group
 */
export function groupUsage(
  members: () => Member[],
  nextId: () => number,
): (call: AdminCall) => Promise<AdminAnswer> {
  let turn = 0;
  return async (call) => {
    const live = members();
    if (live.length === 0) return UNAVAILABLE;
    const worker = live[turn++ % live.length]!;
    const id = nextId();
    const a = await worker.ask({ type: "gw:admin", id, call }, is("gw:admin", id), ANSWER_TIMEOUT_MS);
    return a === null ? UNAVAILABLE : a.answer;
  };
}
