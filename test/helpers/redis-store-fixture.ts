/**
 * A file's own `redis-server` and {@link RedisStore} on it, started before the file's tests and
 * stopped after them.
 */
import { afterAll, beforeAll } from "vitest";
import { RedisStore } from "../../gateway/ratelimit/redis-store.js";
import { RedisServer } from "./redis-server.js";

/** Set by `beforeAll`; read them inside tests only. */
export interface RedisStoreFixture {
  server: RedisServer;
  store: RedisStore;
}

/**
 * Registers the hooks. @param keyPrefix - the store's `key_prefix` (command timeout 5000 ms)
 */
export function useRedisStore(keyPrefix: string): RedisStoreFixture {
  const fixture = {} as RedisStoreFixture;
  beforeAll(async () => {
    fixture.server = await RedisServer.start();
    fixture.store = new RedisStore({
      redis: { url: fixture.server.url, key_prefix: keyPrefix, command_timeout_ms: 5000 },
    });
  });
  afterAll(async () => {
    await fixture.store?.close();
    await fixture.server?.destroy();
  });
  return fixture;
}
