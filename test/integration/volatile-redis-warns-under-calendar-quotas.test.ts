/**
 * SPEC §19: with calendar windows configured, `gateway check --connect` and the start-up log warn,
 * naming the Redis address, when that Redis persists nothing (no RDB `save` points, `appendonly
 * no`), since its restart would restart every period's count. A Redis with a save point is fine;
 * without calendar windows nothing is said; a Redis that refuses CONFIG is tolerated.
 */
import type { Server } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { systemClock } from "../../gateway/base/clock.js";
import { createLimiter } from "../../gateway/ratelimit/create.js";
import type { LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { persistenceOf } from "../../gateway/ratelimit/redis-persistence.js";
import { runGateway } from "../helpers/gateway-command.js";
import { closeServer, listen } from "../helpers/http.js";
import { TOKENS_FILE } from "../helpers/gateway.js";
import { RedisServer, waitFor } from "../helpers/redis-server.js";
import { captureLogger, configWith, testMetrics } from "../helpers/redis-limiter.js";

let volatile: RedisServer;
let upstream: { server: Server; url: string };
let saving: RedisServer;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "gateway-volatile-"));
  [volatile, saving, upstream] = await Promise.all([
    RedisServer.start(["--save", "", "--appendonly", "no"]),
    RedisServer.start(["--save", "3600 1"]),
    listen((_req, res) => res.end("ok")), // --connect tries the upstream too
  ]);
}, 30_000);

afterAll(async () => {
  await Promise.all([volatile?.destroy(), saving?.destroy(), closeServer(upstream.server)]);
  rmSync(dir, { recursive: true, force: true });
});

/** A configuration file on `redisUrl`, with a monthly window or a sliding one only. */
function configFile(name: string, redisUrl: string, calendar: boolean): string {
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    stringify({
      upstreams: { docs: { url: upstream.url } },
      routes: [{ prefix: "/v1", upstream: "docs" }],
      auth: { static: { tokens_file: TOKENS_FILE } },
      rate_limits: {
        store: { redis: { url: redisUrl, key_prefix: `vol-${name}` } },
        classes: {
          read: { windows: [calendar ? { limit: 1000, period: "month" } : { limit: 10, window_s: 60 }] },
        },
      },
    }),
  );
  return file;
}

describe("gateway check --connect", () => {
  it("warns, naming the address, about a Redis that persists nothing under calendar windows; exit 0", async () => {
    const file = configFile("volatile", volatile.url, true);
    const r = await runGateway(["check", "--connect", "--config", file], { timeoutMs: 45_000 });
    expect(r.status).toBe(0);
    const line = r.stdout.split("\n").find((l) => l.includes(`redis ${volatile.url}`));
    expect(line).toBe(
      `  warn redis ${volatile.url}: connected, PING answered PONG, CONFIG GET save "", appendonly no; ` +
        "warning: calendar windows are configured but this Redis persists nothing (no RDB `save` points, " +
        "`appendonly no`): its restart would restart every period's count; configure `save` or " +
        `\`appendonly yes\` (${volatile.url})`,
    );
  }, 100_000);

  it("says ok for a Redis with a save point, and asks nothing without calendar windows", async () => {
    // One after the other: each is a whole `gateway` process, on a machine other tests load too.
    const withSave = await runGateway(
      ["check", "--connect", "--config", configFile("saving", saving.url, true)],
      {
        timeoutMs: 45_000,
      },
    );
    const sliding = await runGateway(
      ["check", "--connect", "--config", configFile("sliding", volatile.url, false)],
      {
        timeoutMs: 45_000,
      },
    );
    expect(withSave.stdout).toContain(
      `  ok   redis ${saving.url}: connected, PING answered PONG, CONFIG GET save "3600 1", appendonly no\n`,
    );
    expect(sliding.stdout).toContain(`  ok   redis ${volatile.url}: connected, PING answered PONG\n`);
    expect(`${withSave.stdout}${sliding.stdout}`).not.toContain("warning");
  }, 100_000);
});

describe("the start-up log", () => {
  const monthly: LimitPolicy = {
    className: "read",
    algorithm: "sliding_window",
    mode: "enforce",
    windows: [{ limit: 1000, period: "month", offsetMs: 0 }],
  };

  /** Starts a limiter on `url`; returns its log lines about persistence once the check has run. */
  async function persistenceLines(url: string, calendar: boolean) {
    const { logger, lines } = captureLogger();
    const handle = createLimiter(
      configWith({
        store: { redis: { url, key_prefix: `vol-start-${calendar}` } },
        classes: {
          read: { windows: [calendar ? { limit: 1000, period: "month" } : { limit: 10, window_s: 60 }] },
        },
      }),
      { clock: systemClock, ...testMetrics(), logger },
    );
    try {
      await handle.started();
      const about = () => lines.filter((l) => /persist/i.test(String(l.msg)));
      // With calendar windows the check always ends in one line (a warning, or what it found at
      // debug); without, it never starts, and a round trip on the connection shows nothing came.
      if (calendar) await waitFor("the persistence check", () => Promise.resolve(about().length > 0), 5000);
      else await handle.limiter.consume("u:x", monthly);
      return about();
    } finally {
      await handle.limiter.close();
    }
  }

  it("warns once, naming the Redis address, when that Redis persists nothing", async () => {
    const lines = await persistenceLines(volatile.url, true);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: "warn", redis: volatile.url });
    expect(lines[0]!.msg).toContain("persists nothing");
    expect(lines[0]!.msg).toContain(`(${volatile.url})`);
  });

  it("does not warn for a Redis with a save point, and checks nothing without calendar windows", async () => {
    const [withSave, sliding] = await Promise.all([
      persistenceLines(saving.url, true),
      persistenceLines(volatile.url, false),
    ]);
    expect(withSave).toEqual([
      expect.objectContaining({ level: "debug", redis: saving.url, save: "3600 1", appendonly: "no" }),
    ]);
    expect(sliding).toEqual([]);
  });

  it("tolerates a Redis that refuses CONFIG: nothing is known, nothing thrown", async () => {
    const refused = await persistenceOf(() => Promise.reject(new Error("ERR unknown command 'CONFIG'")));
    expect(refused).toEqual({ known: false, why: "ERR unknown command 'CONFIG'" });
    // A real server with CONFIG renamed away (as managed services do): still no exception.
    const renamed = await RedisServer.start(["--rename-command", "CONFIG", ""]);
    try {
      const lines = await persistenceLines(renamed.url, true);
      expect(lines).toEqual([expect.objectContaining({ level: "debug", redis: renamed.url })]);
      expect(lines[0]!.msg).toBe("could not read Redis persistence settings");
    } finally {
      await renamed.destroy();
    }
  });
});
