/**
 * SPEC §21 usage operations through a Redis that loses data (restarted without persistence,
 * flushed, restored from an older snapshot, a replica promoted behind its master): a replica that
 * had read the change counter before must still learn of the changes made after, even when as many
 * were made as were lost (the counter, back where it was, would read the same number).
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisAdminStore } from "../../gateway/ratelimit/redis-admin-store.js";
import type { Override } from "../../gateway/ratelimit/overrides.js";
import { cli, RedisServer } from "../helpers/redis-server.js";

const override = (identity: string, limit: number): Override => ({
  identity,
  classes: { read: [{ limit, window_s: 60 }] },
  expires_at: null,
});

describe("the admin store's change counter across a Redis data loss", () => {
  let redis: RedisServer;
  let client: Redis;
  let store: RedisAdminStore;

  beforeAll(async () => {
    redis = await RedisServer.start();
    client = new Redis(redis.url, { lazyConnect: false });
    store = new RedisAdminStore(client, "adminloss:", 5000);
  });

  afterAll(async () => {
    client.disconnect();
    await redis.destroy();
  });

  it("a replica that read the counter before the loss learns every change made after it", async () => {
    await store.setOverride("sub:alice", override("sub:alice", 9));
    const before = await store.poll(-1);
    expect(before?.overrides.map((o) => o.identity)).toEqual(["sub:alice"]);
    const seen = before!.version;
    // Nothing changed since: nothing to learn.
    expect(await store.poll(seen)).toBeNull();

    expect(await cli(redis.port, "FLUSHALL")).toBe("OK");
    // As many changes after the loss as before it.
    await store.setOverride("sub:bob", override("sub:bob", 7));

    const after = await store.poll(seen);
    expect(after).not.toBeNull();
    expect(after!.version).not.toBe(seen);
    expect(after!.overrides.map((o) => o.identity)).toEqual(["sub:bob"]);
    // What was forgotten is not known: every replica forgets every cached refusal.
    expect(after!.identities).toBeNull();
    expect(await store.poll(after!.version)).toBeNull();
  });

  it("a replica learns of a restore from an older snapshot, and of the changes made after it", async () => {
    await store.setOverride("sub:dave", override("sub:dave", 3));
    expect(await cli(redis.port, "SAVE")).toBe("OK");
    // Made after the snapshot, seen by the replica, then lost with the restart.
    await store.setOverride("sub:erin", override("sub:erin", 4));
    const seen = (await store.poll(-1))!.version;
    await redis.stop();
    await redis.start();
    // Before any change: what the replica holds is not what Redis holds any more.
    const restored = await store.poll(seen);
    expect(restored).not.toBeNull();
    expect(restored!.identities).toBeNull();
    expect(restored!.overrides.map((o) => o.identity).sort()).toEqual(["sub:bob", "sub:dave"]);
    // As many changes after the restore as were lost: the counter does not land on `seen`.
    await store.setOverride("sub:frank", override("sub:frank", 2));
    const after = await store.poll(seen);
    expect(after!.version).not.toBe(seen);
    expect(after!.overrides.map((o) => o.identity).sort()).toEqual(["sub:bob", "sub:dave", "sub:frank"]);
  });

  it("with a user whose ACL refuses INFO, still works and still sees a flushed Redis", async () => {
    await cli(redis.port, "ACL", "SETUSER", "noinfo", "on", ">noinfo-pw", "~*", "&*", "+@all", "-info");
    const limited = new Redis(redis.url, { username: "noinfo", password: "noinfo-pw" });
    try {
      const own = new RedisAdminStore(limited, "adminnoinfo:", 5000);
      await own.setOverride("sub:alice", override("sub:alice", 9));
      const seen = (await own.poll(-1))!.version;
      expect(await own.poll(seen)).toBeNull();
      expect(await cli(redis.port, "FLUSHALL")).toBe("OK");
      await own.setOverride("sub:bob", override("sub:bob", 7));
      const after = await own.poll(seen);
      expect(after!.identities).toBeNull();
      expect(after!.overrides.map((o) => o.identity)).toEqual(["sub:bob"]);
    } finally {
      limited.disconnect();
    }
  });

  it("counts on from where it was while Redis keeps its data", async () => {
    const start = (await store.poll(-1))!.version;
    await store.setOverride("sub:carol", override("sub:carol", 5));
    await store.setOverride("sub:carol", null);
    const news = await store.poll(start);
    expect(news!.version).toBe(start + 2);
    expect(news!.identities).toEqual(["sub:carol"]);
  });
});
