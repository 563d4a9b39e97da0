/**
 * Does the Redis that counts calendar quotas keep them across its own restart? (SPEC §19.) A Redis
 * with neither RDB `save` points nor `appendonly` starts empty after a restart, and so would every
 * month's count: `gateway check --connect` and the start-up log warn, naming the address. Read with
 * `CONFIG GET`, which managed services may refuse or rename: then nothing is known and nothing is
 * said but that.
 */
import type { Logger } from "pino";
import type { RedisConfig } from "../config/schema.js";

/** What `CONFIG GET save` and `CONFIG GET appendonly` said. */
export type Persistence =
  | { known: true; persists: boolean; save: string; appendonly: string }
  | { known: false; why: string };

/** Sends one command and resolves with its reply (ioredis's `client.call`). */
export type RedisCall = (command: string, ...args: string[]) => Promise<unknown>;

/** The value of a `CONFIG GET <name>` reply (`[name, value]`), or undefined. */
function configValue(reply: unknown): string | undefined {
  return Array.isArray(reply) && reply.length >= 2 ? String(reply[1]) : undefined;
}

/**
 * @returns whether that Redis persists anything; `known: false` when it refused `CONFIG GET` (or
 *   the connection failed), with the reason
 */
export async function persistenceOf(call: RedisCall): Promise<Persistence> {
  try {
    const [save, appendonly] = (
      await Promise.all([call("CONFIG", "GET", "save"), call("CONFIG", "GET", "appendonly")])
    ).map(configValue);
    if (save === undefined || appendonly === undefined)
      return { known: false, why: "CONFIG GET answered nothing" };
    return { known: true, persists: save.trim() !== "" || appendonly === "yes", save, appendonly };
  } catch (err) {
    return { known: false, why: err instanceof Error ? err.message : String(err) };
  }
}

type CalendarWindow = { period?: string | undefined };
/** A class's windows and its budgets' (SPEC §22), or a plan entry of that shape. */
type Levels = {
  windows: readonly CalendarWindow[];
  budgets?: readonly { windows: readonly CalendarWindow[] }[] | undefined;
};

/** True when any window of these policies (budgets included) is a calendar one (`period`). */
export function hasCalendarWindows(config: {
  classes: Readonly<Record<string, Levels>>;
  plans: Readonly<Record<string, Readonly<Record<string, readonly CalendarWindow[] | Levels>>>>;
  anonymous: { windows: readonly CalendarWindow[] };
}): boolean {
  const all = (l: Levels): readonly CalendarWindow[] => [
    ...l.windows,
    ...(l.budgets ?? []).flatMap((b) => b.windows),
  ];
  const entry = (e: readonly CalendarWindow[] | Levels): readonly CalendarWindow[] =>
    Array.isArray(e) ? (e as readonly CalendarWindow[]) : all(e as Levels);
  const windows = [
    ...Object.values(config.classes).flatMap(all),
    ...Object.values(config.plans).flatMap((p) => Object.values(p).flatMap(entry)),
    ...config.anonymous.windows,
  ];
  return windows.some((w) => w.period !== undefined);
}

/** The address of a Redis block as logs name it, passwords masked. */
export function redisAddress(cfg: RedisConfig): string {
  const mask = (url: string): string => {
    try {
      const u = new URL(url);
      if (u.password !== "") u.password = "***";
      return u.toString().replace(/\/$/, "");
    } catch {
      return url;
    }
  };
  if (cfg.cluster !== undefined) return `cluster ${cfg.cluster.map(mask).join(", ")}`;
  if (cfg.sentinels !== undefined)
    return `sentinel ${cfg.name ?? ""} via ${cfg.sentinels.map(mask).join(", ")}`;
  return mask(cfg.url ?? "redis://127.0.0.1:6379");
}

/** The warning's text: what is at stake, and the two settings that fix it. */
export const VOLATILE_QUOTAS_WARNING =
  "calendar windows are configured but this Redis persists nothing (no RDB `save` points, `appendonly no`): " +
  "its restart would restart every period's count; configure `save` or `appendonly yes`";

/**
 * The start-up warning (SPEC §19): logged once the connection answers, when calendar windows are
 * configured and that Redis persists nothing. Never throws; what it found otherwise (persistence on,
 * or `CONFIG` refused) is one line at debug.
 */
export async function warnIfVolatile(
  call: RedisCall,
  redis: RedisConfig,
  logger: Pick<Logger, "warn" | "debug">,
): Promise<void> {
  const p = await persistenceOf(call);
  const address = redisAddress(redis);
  if (!p.known) logger.debug({ redis: address, err: p.why }, "could not read Redis persistence settings");
  else if (p.persists)
    logger.debug(
      { redis: address, save: p.save, appendonly: p.appendonly },
      "Redis persists calendar counts",
    );
  else logger.warn({ redis: address }, `${VOLATILE_QUOTAS_WARNING} (${address})`);
}
