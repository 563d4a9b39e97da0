/**
 * SIGHUP for a process group (SPEC §15: validated once, applied by every worker within 1 s, or by
 * none). The primary validates the file with the one loader (`checkFiles`: the tokens file too);
 * then two phases: every serving worker builds the configuration (`gw:prepare`: certificates,
 * tokens, upstream clients), and only when all have does any swap it in (`gw:commit`); one refusal
 * or silence and all drop it (`gw:abort`). A worker that dies meanwhile is no refusal: its
 * replacement starts on whatever this decides.
 */
import { loadConfig, type LoadedConfig } from "../config/load.js";
import { hashOf } from "../config/named-files.js";
import type { HealthReport } from "../proxy/health-checker.js";
import { is, type Member } from "./member.js";
import { checkFiles } from "../server/config-files.js";

/** Each worker has this long to build a reloaded configuration (tokens file included) (ms). */
const PREPARE_TIMEOUT_MS = 10_000;

/** What a reload came to: the configuration now in force everywhere, or why nothing changed. */
export type GroupReload = { ok: true; next: LoadedConfig } | { ok: false; message: string };

/**
 * @param file - the configuration file
 * @param running - how many workers the group runs (a store shared by them stays required)
 * @param members - the serving workers
 * @param id - a number no other exchange of these workers uses
 * @param health - the primary's active health results, applied by each worker as it commits (its
 *   new upstreams would otherwise start healthy until the next broadcast)
 */
export async function reloadGroup(
  file: string,
  running: number,
  members: readonly Member[],
  id: number,
  health: readonly HealthReport[] = [],
): Promise<GroupReload> {
  let next: LoadedConfig;
  try {
    next = loadConfig(file, process.env, { checkFiles });
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
  if (next.config.rate_limits.store.redis === undefined) {
    return {
      ok: false,
      message: `rate_limits.store.redis: required while ${running} workers run (the memory store counts in each process)`,
    };
  }
  const hash = hashOf(next);
  const prepare = { type: "gw:prepare" as const, id, config: next.config, baseDir: next.baseDir, hash };
  const answers = await Promise.all(
    members.map((m) => m.ask(prepare, is("gw:prepared", id), PREPARE_TIMEOUT_MS)),
  );
  const refusal = answers.findIndex((a, i) => (a === null ? !members[i]!.exited : a.error !== null));
  if (refusal >= 0) {
    for (const m of members) m.send({ type: "gw:abort", id });
    const message =
      answers[refusal]?.error ??
      `worker ${members[refusal]!.pid} did not answer within ${PREPARE_TIMEOUT_MS} ms`;
    return { ok: false, message };
  }
  await Promise.all(
    members.map((m) =>
      m.ask({ type: "gw:commit", id, health: [...health] }, is("gw:committed", id), PREPARE_TIMEOUT_MS),
    ),
  );
  return { ok: true, next };
}
