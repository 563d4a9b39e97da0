/**
 * Once Redis has said that nothing is left (the call that
 * used the last unit, or a 429), further calls of that identity in that class until Reset make no
 * Redis call at all (`INFO commandstats`) and get exactly what
 * Redis would answer (status, headers, body: a second gateway with an empty cache asks Redis at the
 * same moment); the call at Reset is admitted; a reload (new policies) asks Redis again.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request, type TestResponse } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";
import { cli, RedisServer } from "../helpers/redis-server.js";

const auth = { authorization: "Bearer valid-token" };
let redis: RedisServer;
let upstream: { server: Server; url: string };
let dir: string;
const gateways: TestGateway[] = [];

function config(limit: number): Record<string, unknown> {
  return testConfig(upstream.url, {
    rate_limits: {
      store: { redis: { url: redis.url, key_prefix: "local429", command_timeout_ms: 2000 } },
      classes: {
        read: {
          match: { methods: ["GET"] },
          algorithm: "sliding_log",
          windows: [
            { limit, window_s: 6 }, // long enough for a loaded machine to stay within it
            { limit: 1000, window_s: 3600 },
          ],
        },
      },
    },
  });
}

beforeAll(async () => {
  redis = await RedisServer.start();
  upstream = await listen((_req, res) => res.end('{"ok":true}'));
  dir = mkdtempSync(path.join(tmpdir(), "local429-"));
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  await closeServer(upstream.server);
  await redis.destroy();
  rmSync(dir, { recursive: true, force: true });
});

async function evalshaCalls(): Promise<number> {
  const m = /cmdstat_evalsha:calls=(\d+)/.exec(await cli(redis.port, "INFO", "commandstats"));
  return m ? Number(m[1]) : 0;
}

/** Status, body and every header but the per-response ones. */
function answer(r: TestResponse): Record<string, unknown> {
  const { "x-request-id": _id, date: _date, ...headers } = r.headers;
  return { status: r.status, headers, body: r.body };
}

async function started(limit: number): Promise<TestGateway> {
  const gw = await startGateway(config(limit));
  gateways.push(gw);
  return gw;
}

describe("a caller over its limit", () => {
  it("is answered locally until Reset, exactly as Redis answers, and admitted at Reset", async () => {
    const gw = await started(3);
    const get = () => request(`${gw.url}/v1/items`, { headers: auth });
    for (let i = 0; i < 3; i++) expect((await get()).status).toBe(200);
    // The third call used the last unit (Remaining 0, Reset: when one more is admitted), so from
    // the fourth on, no call reaches Redis until Reset.
    const before = await evalshaCalls();
    const first = await get();
    expect(first.status).toBe(429);
    const local: TestResponse[] = [];
    for (let i = 0; i < 25; i++) local.push(await get());
    expect(await evalshaCalls()).toBe(before);
    for (const r of local) {
      expect(r.status).toBe(429);
      expect(r.headers["x-ratelimit-remaining"]).toBe("0");
      expect(r.headers["x-ratelimit-reset"]).toBe(first.headers["x-ratelimit-reset"]);
      expect(r.headers["x-ratelimit-limit"]).toBe("3");
    }
    const metrics = await scrape(gw.adminUrl);
    expect(metrics.value("gateway_ratelimit_local_rejections_total", { class: "read" })).toBe(26);
    expect(
      metrics.value("gateway_ratelimit_decisions_total", {
        class: "read",
        plan: "none",
        outcome: "limited",
        window: "6s",
      }),
    ).toBe(26);

    // What Redis itself answers now: a gateway with an empty cache on the same keys, asked in the
    // same second (Retry-After counts whole seconds).
    const cold = await started(3);
    for (let attempt = 0; ; attempt++) {
      const second = Math.floor(Date.now() / 1000);
      const mine = await get();
      const redisAnswer = await request(`${cold.url}/v1/items`, { headers: auth });
      if (Math.floor(Date.now() / 1000) !== second && attempt < 5) continue;
      expect(answer(mine)).toEqual(answer(redisAnswer));
      break;
    }

    // A client that waits until Reset is admitted.
    const resetMs = Number(first.headers["x-ratelimit-reset"]) * 1000;
    await new Promise((r) => setTimeout(r, Math.max(0, resetMs - Date.now()) + 5));
    const after = await evalshaCalls();
    expect((await get()).status).toBe(200);
    expect(await evalshaCalls()).toBe(after + 1);
  });

  it("is asked about again after a reload", async () => {
    const gw = await started(2);
    const get = () => request(`${gw.url}/v1/reload`, { headers: { authorization: "Bearer reader-token" } });
    for (let i = 0; i < 2; i++) expect((await get()).status).toBe(200);
    expect((await get()).status).toBe(429);
    let before = await evalshaCalls();
    expect((await get()).status).toBe(429);
    expect(await evalshaCalls()).toBe(before);

    // The same limits, recompiled: Redis answers the next call, then the cache again. (The reload
    // also re-reads the static tokens file, so that call's token lookup asks Redis too.)
    const localAnswers = async () =>
      (await scrape(gw.adminUrl)).value("gateway_ratelimit_local_rejections_total", { class: "read" });
    const file = path.join(dir, "same.yaml");
    writeFileSync(file, stringify(config(2)));
    expect(await gw.gateway.reload(file)).toBe(true);
    const local = await localAnswers();
    expect((await get()).status).toBe(429);
    expect(await localAnswers()).toBe(local);
    before = await evalshaCalls();
    expect((await get()).status).toBe(429);
    expect((await get()).status).toBe(429);
    expect(await evalshaCalls()).toBe(before);
    expect(await localAnswers()).toBe(local + 2);

    // A raised limit applies at once.
    writeFileSync(file, stringify(config(5)));
    expect(await gw.gateway.reload(file)).toBe(true);
    const raised = await get();
    expect(raised.status).toBe(200);
    expect(raised.headers["x-ratelimit-limit"]).toBe("5");
  });
});
