/**
 * SPEC §18 "it sheds only on evidence", end to end: a fresh gateway, and one whose reload changed
 * the block, admit a burst of 200 concurrent calls to an idle upstream answering in 100 ms; long streams open across the no-load
 * re-measurement (reached by moving the gateway's monotonic clock a minute on) hold no new call
 * back; and a gateway whose own event loop is busy (a bounded synchronous spin in this process) in
 * front of a fast upstream does not shrink the limit.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { afterEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { ManualClock } from "../../gateway/base/clock.js";
import { MEASURE_MS, PROBE_INTERVAL_MS } from "../../gateway/proxy/adaptive-limit.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";

/** A caller of the `default` priority (test/fixtures/gateway-tokens.yaml). */
const TOKEN = "reader-token";
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A clock whose monotonic reading the test can move forward (the adaptive limit's clock). */
class ShiftedClock extends ManualClock {
  shiftMs = 0;
  override monotonicMs(): number {
    return performance.now() + this.shiftMs;
  }
}

async function upstreamOf(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const u = await listen(handler);
  cleanups.push(() => closeServer(u.server));
  return u.url;
}

/** The gateway's configuration: an adaptive limit of [5, max_limit], no plan listed. */
function configFor(url: string, maxLimit = 1000): Record<string, unknown> {
  const base = testConfig(url);
  const rl = base.rate_limits as { classes: Record<string, unknown> };
  rl.classes.read = { match: { methods: ["GET"] }, windows: [{ limit: 1_000_000, window_s: 3600 }] };
  return {
    ...base,
    upstreams: {
      docs: { url, timeout_ms: 10_000, adaptive_concurrency: { min_limit: 5, max_limit: maxLimit } },
    },
    load_shedding: { priorities: {} },
  };
}

async function gatewayFor(url: string, clock?: ShiftedClock): Promise<TestGateway> {
  const g = await startGateway(configFor(url), { clock });
  cleanups.push(() => g.close());
  return g;
}

/** One call on a connection of its own (a burst never races a keep-alive socket's close). */
const call = (g: TestGateway, target = "/v1/items", via?: http.Agent) =>
  request(`${g.url}${target}`, { headers: { authorization: `Bearer ${TOKEN}` }, agent: via });

const limitOf = async (g: TestGateway): Promise<number> =>
  JSON.parse((await request(`${g.adminUrl}/upstreams`)).body).upstreams.docs.concurrency_limit as number;

describe("the adaptive limit sheds only on evidence (SPEC §18)", () => {
  it("a fresh gateway admits a burst of 200 concurrent calls to an idle upstream answering in 100 ms", async () => {
    const url = await upstreamOf((_req, res) => void setTimeout(() => res.end("ok"), 100));
    const g = await gatewayFor(url);
    const answers = await Promise.all(Array.from({ length: 200 }, () => call(g)));
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    // Again, now that it has seen them: latency at its no-load value is no evidence.
    const again = await Promise.all(Array.from({ length: 200 }, () => call(g)));
    expect(again.filter((a) => a.status !== 200)).toEqual([]);
    expect(await limitOf(g)).toBe(1000);
  }, 30_000);

  it("after a reload that changes the block, the same burst is admitted whole", async () => {
    const url = await upstreamOf((_req, res) => void setTimeout(() => res.end("ok"), 100));
    const g = await gatewayFor(url);
    const dir = mkdtempSync(path.join(tmpdir(), "gw-adaptive-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, "gateway.yaml");
    writeFileSync(file, stringify(configFor(url, 900)));
    expect(await g.gateway.reload(file)).toBe(true);
    expect(await limitOf(g)).toBe(900);
    const answers = await Promise.all(Array.from({ length: 200 }, () => call(g)));
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
  }, 30_000);

  it("long streams open across the re-measurement mark hold no new call back", async () => {
    const streams: ServerResponse[] = [];
    const url = await upstreamOf((req, res) => {
      if (req.url!.startsWith("/v1/stream")) {
        res.writeHead(200, { "content-type": "text/plain" });
        res.write("first chunk");
        streams.push(res);
      } else res.end("ok");
    });
    cleanups.push(async () => {
      for (const s of streams) s.end();
    });
    const clock = new ShiftedClock();
    const g = await gatewayFor(url, clock);
    // 30 streams whose heads are in (each a sample) and whose bodies stay open.
    const heads = await Promise.all(
      Array.from(
        { length: 30 },
        () =>
          new Promise<IncomingMessage>((resolve, reject) => {
            http
              .get(
                `${g.url}/v1/stream`,
                { headers: { authorization: `Bearer ${TOKEN}` }, agent: false },
                resolve,
              )
              .on("error", reject);
          }),
      ),
    );
    expect(heads.map((h) => h.statusCode)).toEqual(Array(30).fill(200));
    // The mark, with the streams still in flight: calls neither shed nor held back.
    clock.shiftMs += PROBE_INTERVAL_MS + 1000;
    const during = await Promise.all(Array.from({ length: 100 }, () => call(g)));
    expect(during.filter((a) => a.status !== 200)).toEqual([]);
    expect(await limitOf(g)).toBe(1000);
    // Past the re-measurement's 2 s, the streams still open: still nothing shed.
    clock.shiftMs += MEASURE_MS;
    const after = await Promise.all(Array.from({ length: 100 }, () => call(g)));
    expect(after.filter((a) => a.status !== 200)).toEqual([]);
    for (const s of streams) s.end();
    for (const h of heads) {
      h.resume();
      await new Promise((r) => h.on("end", r));
    }
  }, 30_000);

  it("a busy event loop in front of a fast upstream does not shrink the limit", async () => {
    const url = await upstreamOf((_req, res) => res.end("ok"));
    const g = await gatewayFor(url);
    // The no-load latency, learnt while the loop is free.
    for (let i = 0; i < 3; i++) await Promise.all(Array.from({ length: 20 }, () => call(g)));
    // Then this process spins 40 ms out of every ~41 under 20 callers in a loop, until they have
    // made 300 calls (at most 8 s).
    let spinning = true;
    let made = 0;
    const spinner = (async () => {
      const end = performance.now() + 8000;
      while (performance.now() < end && made < 300) {
        const until = performance.now() + 40;
        while (performance.now() < until) {
          // busy: the gateway's event loop is held up
        }
        await new Promise((r) => setImmediate(r));
      }
      spinning = false;
    })();
    const statuses: number[] = [];
    const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 20 });
    const caller = async (): Promise<void> => {
      while (spinning) {
        made++;
        statuses.push((await call(g, "/v1/items", keepAlive)).status);
      }
    };
    await Promise.all([spinner, ...Array.from({ length: 20 }, caller)]);
    keepAlive.destroy();
    // Enough answers for several of the limit's windows.
    expect(made).toBeGreaterThanOrEqual(60);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(await limitOf(g)).toBe(1000);
  }, 30_000);
});
