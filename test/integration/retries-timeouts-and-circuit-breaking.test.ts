/**
 * SPEC §17 end to end, against real endpoints: retries (connection failures to another endpoint,
 * listed statuses, only idempotent calls or an Idempotency-Key, bodies replayed, the last answer
 * relayed), the retry budget, per-try and route timeouts, max_in_flight (503 upstream_overloaded
 * before the limiter) and body limits (413 from the head, or a body cut when it grows past it).
 */
import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import net from "node:net";
import { once } from "node:events";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../gateway/observability/logger.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { agent, closeServer, listen, request } from "../helpers/http.js";
import { logLines, type LogLines } from "../helpers/log-lines.js";
import { scrape } from "../helpers/prom.js";
import { freePort, waitFor } from "../helpers/redis-server.js";

const AUTH = { authorization: "Bearer valid-token" };
const keepAlive = agent();
/** Each endpoint answers `plan` in turn (then its last entry), echoing the body's length. */
interface Behaviour {
  statuses: number[];
  delayMs: number;
  calls: number;
  bodies: number[];
  /** SHA-256 of each body received. */
  digests: string[];
  open: number;
  /**
   * With n > 0, the first n calls are answered together once the n-th arrived (a burst that is in
   * flight at once however slowly a busy machine delivers it); later calls as usual.
   */
  barrier: number;
  /** Answers held until the barrier. */
  held: (() => void)[];
}
const behaviours: Behaviour[] = [];
const servers: Awaited<ReturnType<typeof listen>>[] = [];
let gw: TestGateway | null = null;
let log: LogLines;

function handler(b: Behaviour) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    b.calls++;
    b.open++;
    res.on("close", () => b.open--);
    let size = 0;
    const hash = createHash("sha256");
    req.on("data", (c: Buffer) => {
      size += c.length;
      hash.update(c);
    });
    req.on("end", () => {
      b.bodies.push(size);
      b.digests.push(hash.digest("hex"));
      const status = b.statuses[Math.min(b.calls - 1, b.statuses.length - 1)]!;
      const answer = (): void => {
        if (res.destroyed) return;
        res.writeHead(status, { "content-type": "text/plain", "x-status": String(status) });
        res.end(`status ${status} size ${size}`);
      };
      if (b.barrier > 0 && b.held.length < b.barrier - 1 && b.calls < b.barrier) {
        b.held.push(answer);
        return;
      }
      if (b.held.length > 0) for (const release of b.held.splice(0)) setTimeout(release, b.delayMs);
      setTimeout(answer, b.delayMs);
    });
  };
}

beforeAll(async () => {
  for (let i = 0; i < 2; i++) {
    const b: Behaviour = {
      statuses: [200],
      delayMs: 0,
      calls: 0,
      bodies: [],
      digests: [],
      open: 0,
      barrier: 0,
      held: [],
    };
    behaviours.push(b);
    servers.push(await listen(handler(b)));
  }
});

afterEach(async () => {
  await gw?.close();
  gw = null;
  // `open` is not reset: a request a test gave up may still close upstream after it.
  for (const b of behaviours)
    Object.assign(b, {
      statuses: [200],
      delayMs: 0,
      calls: 0,
      bodies: [],
      digests: [],
      barrier: 0,
      held: [],
    });
});

afterAll(async () => {
  keepAlive.destroy();
  for (const s of servers) await closeServer(s.server);
});

async function gatewayWith(route: Record<string, unknown>, upstream: Record<string, unknown>, listen = {}) {
  const base = testConfig(servers[0]!.url);
  const rl = base.rate_limits as { classes: Record<string, unknown> };
  rl.classes.read = { match: { methods: ["GET", "HEAD"] }, windows: [{ limit: 1000, window_s: 3600 }] };
  rl.classes.write = {
    match: { methods: ["POST", "PUT", "DELETE"] },
    windows: [{ limit: 1000, window_s: 3600 }],
  };
  log = logLines();
  gw = await startGateway(
    {
      ...base,
      listen: { host: "127.0.0.1", port: 0, grace_ms: 500, ...listen },
      upstreams: { docs: { timeout_ms: 5000, outlier_detection: { consecutive_failures: 0 }, ...upstream } },
      routes: [{ prefix: "/v1", upstream: "docs", ...route }],
    },
    { logger: createLogger("info", log.destination) },
  );
  return gw;
}

const call = (
  g: TestGateway,
  method: string,
  id: string,
  headers: Record<string, string> = {},
  body?: string,
) =>
  request(`${g.url}/v1/items`, {
    method,
    headers: {
      ...AUTH,
      "x-request-id": id,
      ...headers,
      ...(body === undefined ? {} : { "content-type": "text/plain" }),
    },
    body,
    agent: keepAlive,
  });

const line = (id: string) => log.waitFor((l) => l.reqId === id);
const one = () => ({ url: servers[0]!.url });

describe("retries", () => {
  it("retry a refused connection on the other endpoint; the access line counts the tries", async () => {
    const refused = `http://127.0.0.1:${await freePort()}`;
    const g = await gatewayWith(
      { retries: { attempts: 2 } },
      { endpoints: [{ url: refused }, { url: servers[1]!.url }] },
    );
    const r = await call(g, "GET", "refused");
    expect(r.status).toBe(200);
    expect(behaviours[1]!.calls).toBe(1);
    expect(await line("refused")).toMatchObject({
      status: 200,
      attempts: 2,
      endpoint: `127.0.0.1:${servers[1]!.port}`,
    });
    const m = await scrape(g.adminUrl);
    expect(m.value("gateway_upstream_retries_total", { upstream: "docs", result: "retried" })).toBe(1);
    expect(m.value("gateway_upstream_errors_total", { upstream: "docs", reason: "connect" })).toBe(1);
  });

  it("retry a listed status; the last answer is relayed as the upstream sent it", async () => {
    const g = await gatewayWith({ retries: { attempts: 2, backoff: { base_ms: 1, max_ms: 5 } } }, one());
    behaviours[0]!.statuses = [503, 200];
    let r = await call(g, "GET", "then-ok");
    expect([r.status, behaviours[0]!.calls]).toEqual([200, 2]);
    behaviours[0]!.calls = 0;
    behaviours[0]!.statuses = [503];
    r = await call(g, "GET", "always");
    expect(r.status).toBe(503);
    expect(r.body).toBe("status 503 size 0");
    expect(behaviours[0]!.calls).toBe(3);
    expect(await line("always")).toMatchObject({ status: 503, attempts: 3 });
  });

  it("retry only idempotent calls or those with an Idempotency-Key, replaying a body kept whole", async () => {
    const g = await gatewayWith({ retries: { attempts: 1, backoff: { base_ms: 1, max_ms: 5 } } }, one());
    const b = behaviours[0]!;
    b.statuses = [502, 200];
    expect((await call(g, "POST", "post", {}, "x".repeat(100))).status).toBe(502);
    expect(b.calls).toBe(1);
    Object.assign(b, { calls: 0, bodies: [], digests: [] });
    // 10 KiB of varied bytes, replayed byte-exact.
    const payload = Array.from({ length: 10 * 1024 }, (_, i) =>
      String.fromCharCode(33 + ((i * 7) % 90)),
    ).join("");
    const digest = createHash("sha256").update(payload).digest("hex");
    const keyed = await call(g, "POST", "keyed", { "idempotency-key": "k1" }, payload);
    expect(keyed.status).toBe(200);
    expect(b.digests).toEqual([digest, digest]);
    Object.assign(b, { calls: 0, bodies: [], digests: [] });
    const put = await call(g, "PUT", "put", {}, "z".repeat(64 * 1024));
    expect(put.status).toBe(200);
    expect(b.bodies).toEqual([65536, 65536]);
    // Above 64 KiB (here 100 KiB) the body is streamed, not kept: no retry.
    Object.assign(b, { calls: 0, bodies: [], digests: [] });
    expect((await call(g, "PUT", "big", {}, "z".repeat(100 * 1024))).status).toBe(502);
    expect(b.calls).toBe(1);
  });

  it("stop when the retry budget is spent, counting it", async () => {
    const g = await gatewayWith(
      { retries: { attempts: 2 } },
      { url: servers[0]!.url, retry_budget: { ratio: 0, min_retries: 0 } },
    );
    behaviours[0]!.statuses = [503, 200];
    expect((await call(g, "GET", "budget")).status).toBe(503);
    const m = await scrape(g.adminUrl);
    expect(m.value("gateway_upstream_retries_total", { upstream: "docs", result: "budget_exhausted" })).toBe(
      1,
    );
    expect(m.value("gateway_upstream_retries_total", { upstream: "docs", result: "retried" })).toBe(0);
  });

  it("count a call once in its class however many tries it took", async () => {
    const g = await gatewayWith({ retries: { attempts: 2, backoff: { base_ms: 1, max_ms: 5 } } }, one());
    behaviours[0]!.statuses = [503, 503, 200];
    const r = await call(g, "GET", "thrice");
    expect([r.status, behaviours[0]!.calls]).toEqual([200, 3]);
    expect(r.headers["x-ratelimit-remaining"]).toBe("999");
  });

  it("give an always-failing upstream a bounded share more calls, never a multiple", async () => {
    const g = await gatewayWith({ retries: { attempts: 3, backoff: { base_ms: 20, max_ms: 50 } } }, one());
    behaviours[0]!.statuses = [503];
    behaviours[0]!.delayMs = 20;
    behaviours[0]!.barrier = 100;
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        request(`${g.url}/v1/items`, { headers: { ...AUTH, "x-request-id": `storm-${i}` } }),
      ),
    );
    expect(answers.every((r) => r.status === 503)).toBe(true);
    const sent = behaviours[0]!.calls;
    // Without a budget, attempts: 3 would send 400; the budget (0.2 of tries in flight, at least
    // 3) keeps it to about a third more than the calls.
    expect(sent).toBeGreaterThan(100);
    expect(sent).toBeLessThanOrEqual(140);
    const m = await scrape(g.adminUrl);
    expect(
      m.value("gateway_upstream_retries_total", { upstream: "docs", result: "budget_exhausted" }),
    ).toBeGreaterThan(0);
  });

  it("give up a slow try after per_try_timeout_ms and answer from the other endpoint", async () => {
    const g = await gatewayWith(
      { retries: { attempts: 1, per_try_timeout_ms: 300, backoff: { base_ms: 1, max_ms: 5 } } },
      { endpoints: [{ url: servers[0]!.url }, { url: servers[1]!.url }] },
    );
    behaviours[0]!.delayMs = 3000;
    const started = performance.now();
    const r = await call(g, "GET", "slow");
    expect(r.status).toBe(200);
    expect(performance.now() - started).toBeLessThan(2500);
    expect(behaviours[1]!.calls).toBe(1);
    await waitFor("the slow try closed upstream", async () => behaviours[0]!.open === 0, 3000);
  });
});

describe("route timeout", () => {
  it("answers 504 once timeout_ms passed since the first try, whatever the upstream's", async () => {
    const g = await gatewayWith({ timeout_ms: 300 }, one());
    behaviours[0]!.delayMs = 3000;
    const started = performance.now();
    const r = await call(g, "GET", "route-timeout");
    expect(r.status).toBe(504);
    expect(performance.now() - started).toBeLessThan(2500);
    expect(JSON.parse(r.body)).toEqual({ error: { code: 504, message: "Gateway timeout" } });
  });
});

describe("max_in_flight", () => {
  it("answers 503 upstream_overloaded with Retry-After 1 before the limiter, spending nothing", async () => {
    const g = await gatewayWith({}, { url: servers[0]!.url, max_in_flight: 1 });
    behaviours[0]!.delayMs = 1500;
    const held = call(g, "GET", "held");
    await waitFor("the first call upstream", async () => behaviours[0]!.calls === 1, 3000);
    const r = await call(g, "GET", "over");
    expect(r.status).toBe(503);
    expect(r.headers["retry-after"]).toBe("1");
    expect(JSON.parse(r.body)).toEqual({ error: { code: 503, message: "Service overloaded, please retry" } });
    // The class's window as read, not counted: the held call spent one of 1000.
    expect(r.headers["x-ratelimit-remaining"]).toBe("999");
    expect(r.headers["x-ratelimit-resource"]).toBe("read");
    expect((await held).status).toBe(200);
    expect((await call(g, "GET", "after")).status).toBe(200);
    const m = await scrape(g.adminUrl);
    expect(m.value("gateway_upstream_overloaded_total", { upstream: "docs", priority: "default" })).toBe(1);
    expect(behaviours[0]!.calls).toBe(2);
  });
});

describe("body limits", () => {
  it("refuse a Content-Length above the route's limit with 413 from the head, in the anonymous class", async () => {
    const g = await gatewayWith({ max_body_bytes: 1000 }, one(), { max_body_bytes: 10 });
    const r = await call(g, "POST", "too-long", {}, "x".repeat(1001));
    expect(r.status).toBe(413);
    expect(JSON.parse(r.body)).toEqual({ error: { code: 413, message: "Request body too large" } });
    expect(r.headers["x-ratelimit-resource"]).toBe("anonymous");
    expect(behaviours[0]!.calls).toBe(0);
    expect((await call(g, "POST", "fits", {}, "x".repeat(1000))).status).toBe(200);
  });

  it("cut a body without Content-Length that grows past the limit: 413, its upstream request aborted", async () => {
    const g = await gatewayWith({ max_body_bytes: 1000 }, one());
    const port = Number(new URL(g.url).port);
    const socket = net.connect(port, "127.0.0.1");
    socket.write(
      "POST /v1/items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer valid-token\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    const chunk = `${(600).toString(16)}\r\n${"x".repeat(600)}\r\n`;
    socket.write(chunk);
    socket.write(chunk);
    let answer = "";
    socket.on("data", (c: Buffer) => (answer += c.toString("latin1")));
    await once(socket, "close");
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toMatch(/x-ratelimit-resource: write/i);
    await waitFor("the upstream request aborted", async () => behaviours[0]!.open === 0, 3000);
  });
});
