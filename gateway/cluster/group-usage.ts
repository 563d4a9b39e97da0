/**
 * `GET /usage/top` of a process group (SPEC §15, §21): the primary serves the admin listener and
 * holds no limiter, and workers need the shared Redis store (the memory store counts per process,
 * so more than one worker without Redis is refused at start). The top-caller sets are the Redis
 * ones every worker's limiter keeps, so the primary reads them with a store of its own, opened on
 * the first request and reopened when a reload changes `rate_limits.store.redis`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { GatewayConfig } from "../config/schema.js";
import { RedisStore } from "../ratelimit/redis-store.js";
import type { TopCallersReader, TopEntry } from "../ratelimit/top-callers.js";
import { calendarPeriodsByClass, usageTopRoute } from "../server/usage-top.js";

/** The group's `/usage/top` route and the Redis connection it reads through. */
export class GroupTopCallers {
  private store: RedisStore | null = null;
  private settings = "";
  /** The admin listener's hook (`AdminOptions.routes`). */
  readonly route: (req: IncomingMessage, res: ServerResponse) => boolean;

  /**
   * @param current - the configuration in force
   * @param authorize - the admin token check; absent: the path answers 404 (wired by the owner of
   *   `admin.token_file`)
   */
  constructor(
    private readonly current: () => GatewayConfig,
    authorize?: (req: IncomingMessage) => boolean,
  ) {
    this.route = usageTopRoute({
      current: () => ({ reader: this.reader(), periods: calendarPeriodsByClass(this.current()) }),
      authorize,
    });
  }

  /** Closes the connection (shutdown). */
  close(): void {
    void this.store?.close();
    this.store = null;
  }

  private reader(): TopCallersReader {
    const redis = this.current().rate_limits.store.redis;
    if (redis === undefined) return NONE;
    const settings = JSON.stringify(redis);
    if (this.store === null || settings !== this.settings) {
      void this.store?.close();
      this.store = new RedisStore({ redis });
      this.settings = settings;
    }
    return this.store;
  }
}

/** A group without Redis is one process (no primary); nothing to read then. */
const NONE: TopCallersReader = { top: (): Promise<TopEntry[]> => Promise.resolve([]) };
