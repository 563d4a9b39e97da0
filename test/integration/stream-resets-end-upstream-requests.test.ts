/**
 * SPEC §12 "a stream the client resets aborts its upstream request", under the rapid-reset shape
 * (CVE-2023-44487): 2,000 streams opened and cancelled at once on one HTTP/2 connection
 * against an upstream that holds every request. Every upstream request ends within 1 s of its
 * stream's reset (also those reset while the gateway was still authenticating and counting them),
 * the upstream's connection pool is not exhausted (one connection holds at most
 * `listen.http2_max_streams` of its `max_sockets`), and another client's calls are answered during
 * the flood (within 1 s on an idle machine; the bound leaves room for a loaded one). Also over HTTP/1.1: a client that closes its connection ends its
 * upstream request.
 */
import http2 from "node:http2";
import net from "node:net";
import type { IncomingMessage, ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { h2connect, h2request } from "../helpers/h2.js";
import { closeServer, listen } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";
import { waitFor } from "../helpers/redis-server.js";
import { createPki, tlsListen, type TestPki } from "../helpers/tls.js";

const AUTH = { authorization: "Bearer valid-token" };
let pki: TestPki;
let upstream: Awaited<ReturnType<typeof listen>>;
let gw: TestGateway;
let origin: string;
/** Upstream requests open now (held ones until their client side closes). */
let open = 0;
let received = 0;
const held = new Set<ServerResponse>();

beforeAll(async () => {
  pki = createPki();
  upstream = await listen((req: IncomingMessage, res: ServerResponse) => {
    if (req.url !== "/v1/hold") return void res.end("fast");
    received++;
    open++;
    held.add(res);
    req.on("error", () => {});
    res.on("close", () => {
      open--;
      held.delete(res);
    });
  });
  gw = await startGateway(
    testConfig(upstream.url, {
      listen: tlsListen(pki),
      // The defaults: one connection holds at most http2_max_streams (100) of max_sockets (256).
      upstreams: { docs: { url: upstream.url, timeout_ms: 30_000 } },
      rate_limits: {
        classes: { read: { match: { methods: ["GET"] }, windows: [{ limit: 100_000, window_s: 3600 }] } },
      },
    }),
  );
  origin = `https://localhost:${gw.apiPort}`;
});

afterAll(async () => {
  await gw?.close();
  for (const res of held) res.destroy();
  if (upstream !== undefined) await closeServer(upstream.server);
  pki?.remove();
});

describe("client resets", () => {
  it("end every upstream request within 1 s, and another client is served during the flood", async () => {
    const flood = await h2connect(origin, { ca: pki.ca });
    const other = await h2connect(origin, { ca: pki.ca });
    let slowest = 0;
    let answered = 0;
    let flooding = true;
    const probe = (async () => {
      while (flooding) {
        const t = performance.now();
        const r = await h2request(other, { ":path": "/v1/fast", ...AUTH });
        expect(r.status).toBe(200);
        slowest = Math.max(slowest, performance.now() - t);
        answered++;
      }
    })();
    // 2,000 streams in waves of 500: each stream is cancelled as soon as it is sent, some while the
    // gateway authenticates it, some once its upstream request is on the wire. The client sends a
    // stream queued behind http2_max_streams when a slot frees, then its reset: the flood is over
    // once the client has closed every stream.
    const closed: Promise<void>[] = [];
    for (let wave = 0; wave < 4 && !flood.closed; wave++) {
      const streams = Array.from({ length: 500 }, () => {
        const s = flood.request({ ":path": "/v1/hold", ...AUTH });
        s.on("error", () => {});
        closed.push(new Promise((resolve) => s.once("close", () => resolve())));
        return s;
      });
      await new Promise((r) => setImmediate(r));
      for (const [i, s] of streams.entries()) {
        if (i % 2 === 0) s.close(http2.constants.NGHTTP2_CANCEL);
      }
      await waitFor("some upstream requests", async () => received > wave * 10, 5000).catch(() => {});
      for (const s of streams) s.close(http2.constants.NGHTTP2_CANCEL);
    }
    await Promise.all(closed);
    const resetAt = performance.now();
    await waitFor("every upstream request closed", async () => open === 0, 5000);
    // Within 1 s on an idle machine; 3 s leaves room for a loaded one (held, they would stay 30 s).
    expect(performance.now() - resetAt).toBeLessThan(3000);
    flooding = false;
    await probe;
    expect(answered).toBeGreaterThan(0);
    // Idle, the slowest answer takes tens of ms; 2.5 s leaves room for a loaded machine. A starved
    // pool answers nothing until the held requests time out (30 s here).
    expect(slowest).toBeLessThan(2500);
    // Nothing forwarded for the flood stays open or counted in flight. (The gateway may still be
    // reading the flood's last frames: a stream whose reset it has not read yet can be forwarded,
    // then aborted when the reset is read.)
    await waitFor(
      "nothing open upstream, nothing counted in flight",
      async () => open === 0 && gw.gateway.upstreams().docs!.endpoints[0]!.in_flight === 0,
      3000,
    );
    // A reset stream is logged and counted as the client's abort (499), never as a 200.
    const m = await scrape(gw.adminUrl);
    expect(m.value("gateway_requests_total", { route: "/v1", class: "read", code: "499" })).toBeGreaterThan(
      0,
    );
    flood.destroy();
    other.close();
  });

  it("over HTTP/1.1: a client that closes its connection ends its upstream request", async () => {
    await waitFor("the flood's requests closed", async () => open === 0, 5000);
    const before = received;
    const plain = await startGateway(testConfig(upstream.url));
    try {
      const socket = net.connect(plain.apiPort, "127.0.0.1");
      socket.write("GET /v1/hold HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer valid-token\r\n\r\n");
      await waitFor("the upstream request", async () => received > before, 5000);
      socket.destroy();
      await waitFor("the upstream request closed", async () => open === 0, 3000);
      await waitFor(
        "the gateway's count to follow",
        async () => plain.gateway.upstreams().docs!.endpoints[0]!.in_flight === 0,
        3000,
      );
    } finally {
      await plain.close();
    }
  });
});
