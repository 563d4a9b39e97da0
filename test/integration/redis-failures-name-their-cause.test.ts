/**
 * Wrong Redis settings name their cause (every one used to log ioredis's generic "Stream
 * isn't writeable and enableOfflineQueue options is false"): the outage line's `reason` and `err`,
 * and `gateway_ratelimit_store_errors_total{reason}`, say `WRONGPASS`/`NOAUTH` for a wrong or
 * missing password (a real redis-server with `requirepass`), `ECONNREFUSED` for a refused port,
 * the resolver's code for an unknown host; and a database index that `SELECT` refuses stops the start instead of counting in database 0.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../gateway/config/load.js";
import { ManualClock } from "../../gateway/base/clock.js";
import { createLimiter } from "../../gateway/ratelimit/create.js";
import type { LimitPolicy } from "../../gateway/ratelimit/limiter.js";
import { createGateway } from "../../gateway/server/server.js";
import { stringify } from "yaml";
import { FIXTURES, testConfig } from "../helpers/gateway.js";
import { REFUSED_PORT } from "../helpers/http.js";
import { captureLogger, configWith, testMetrics } from "../helpers/redis-limiter.js";
import { RedisServer, cli } from "../helpers/redis-server.js";

const policy: LimitPolicy = {
  className: "read",
  algorithm: "sliding_window",
  mode: "enforce",
  windows: [{ limit: 10, windowS: 60 }],
};

let plain: RedisServer;
let guarded: RedisServer;

beforeAll(async () => {
  [plain, guarded] = await Promise.all([RedisServer.start(), RedisServer.start(["--requirepass", "right"])]);
});

afterAll(async () => {
  await Promise.all([plain?.destroy(), guarded?.destroy()]);
});

/** A limiter on `url`; one call, then what the outage line and the error metric say. */
async function outageOf(url: string): Promise<{ reason: unknown; err: string; metric: string }> {
  const { metrics, registry } = testMetrics();
  const { logger, lines } = captureLogger();
  const config = configWith({
    store: { redis: { url, key_prefix: "cause", command_timeout_ms: 200 } },
    classes: { read: { windows: [{ limit: 10, window_s: 60 }] } },
  });
  const handle = createLimiter(config, {
    clock: new ManualClock(),
    metrics,
    logger,
    probeIntervalMs: 60_000,
  });
  try {
    await handle.started();
    const d = await handle.limiter.consume("u:a", policy);
    expect(d.degraded).toBe(true);
    const outage = lines.filter((l) => l.level === "error");
    expect(outage).toHaveLength(1);
    for (const l of lines) expect(JSON.stringify(l)).not.toContain("Stream isn't writeable");
    const metric = (await registry.metrics())
      .split("\n")
      .filter((l) => l.startsWith("gateway_ratelimit_store_errors_total{"))
      .join("\n");
    return { reason: outage[0]!.reason, err: String(outage[0]!.err), metric };
  } finally {
    await handle.limiter.close();
  }
}

describe("the outage names what failed", () => {
  it("a wrong password: WRONGPASS", async () => {
    const o = await outageOf(`redis://:wrong@127.0.0.1:${guarded.port}`);
    expect(o.reason).toBe("auth");
    expect(o.err).toMatch(/WRONGPASS/);
    expect(o.err).not.toContain("wrong");
    expect(o.metric).toMatch(/reason="auth"\} [1-9]/);
  });

  it("no password where one is required: NOAUTH", async () => {
    const o = await outageOf(guarded.url);
    expect(o.reason).toBe("auth");
    expect(o.err).toMatch(/NOAUTH/);
  });

  it("a refused port: ECONNREFUSED", async () => {
    const o = await outageOf(`redis://127.0.0.1:${REFUSED_PORT}`);
    expect(o.reason).toBe("refused");
    expect(o.err).toMatch(/ECONNREFUSED 127\.0\.0\.1:1\b/);
    expect(o.metric).toMatch(/reason="refused"\} [1-9]/);
  });

  it("an unknown host: the resolver's error", async () => {
    const o = await outageOf("redis://no-such-host.invalid:6379");
    expect(o.reason).toBe("dns");
    expect(o.err).toMatch(/ENOTFOUND|EAI_AGAIN/);
    expect(o.err).toContain("no-such-host.invalid");
  });

  it("the right password: no outage", async () => {
    const { metrics } = testMetrics();
    const { logger, lines } = captureLogger();
    const config = configWith({
      store: { redis: { url: `redis://:right@127.0.0.1:${guarded.port}`, key_prefix: "cause" } },
      classes: { read: { windows: [{ limit: 10, window_s: 60 }] } },
    });
    const handle = createLimiter(config, { clock: new ManualClock(), metrics, logger });
    await handle.started();
    expect(await handle.limiter.consume("u:b", policy)).toMatchObject({ degraded: false, remaining: 9 });
    expect(lines.filter((l) => l.level === "error")).toEqual([]);
    await handle.limiter.close();
  });
});

it("a database index SELECT refuses stops the start, and nothing is counted in database 0", async () => {
  const yaml = stringify(
    testConfig("http://127.0.0.1:1", {
      rate_limits: {
        store: { redis: { url: `${plain.url}/99`, key_prefix: "db99" } },
        classes: { read: { windows: [{ limit: 10, window_s: 60 }] } },
      },
    }),
  );
  const gateway = createGateway({ config: parseConfig(yaml, "test"), baseDir: FIXTURES });
  try {
    await expect(gateway.listen()).rejects.toThrow(/SELECT refused the URL's database index: .*DB index/);
    await expect(gateway.runtime.limiter.limiter.consume("u:c", policy)).resolves.toMatchObject({
      degraded: true,
    });
    expect(await cli(plain.port, "KEYS", "db99*")).toBe("");
  } finally {
    await gateway.close(0);
  }
});
