import { describe, expect, it } from "vitest";
import type { RedisConfig } from "../../gateway/config/schema.js";
import { redisPasswords } from "../../gateway/ratelimit/redis-connection.js";

const cfg = (c: Record<string, unknown>) => ({ command_timeout_ms: 100, ...c }) as unknown as RedisConfig;

describe("the passwords start and check --connect send (one rule)", () => {
  it("standalone: the URL's, else password", () => {
    expect(redisPasswords(cfg({ url: "redis://:inurl@h:6379", password: "key" }))).toEqual({ data: "inurl" });
    expect(redisPasswords(cfg({ url: "redis://h:6379", password: "key" }))).toEqual({ data: "key" });
    expect(redisPasswords(cfg({ url: "redis://h:6379" }))).toEqual({});
  });

  it("Cluster: password, else the first seed URL's, for every node", () => {
    const cluster = ["redis://a:1", "redis://:second@b:2", "redis://:third@c:3"];
    expect(redisPasswords(cfg({ cluster }))).toEqual({ data: "second" });
    expect(redisPasswords(cfg({ cluster, password: "key" }))).toEqual({ data: "key" });
  });

  it("Sentinel: password for the data servers, the first sentinel URL's for every sentinel", () => {
    const sentinels = ["redis://s1:26379", "redis://:sp@s2:26379"];
    expect(redisPasswords(cfg({ sentinels, name: "m", password: "key" }))).toEqual({
      data: "key",
      sentinel: "sp",
    });
    expect(redisPasswords(cfg({ sentinels: ["redis://s1:26379"], name: "m" }))).toEqual({});
  });
});
