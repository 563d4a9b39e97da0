/**
 * SPEC §16: an endpoint ejected by outlier detection that then fails its active health check was
 * down (a restarted instance); it returns once `healthy_threshold` probes pass, whatever remains of
 * its ejection. One whose probes kept passing while its calls failed serves its ejection out.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { freePort } from "../helpers/redis-server.js";
import { request } from "../helpers/http.js";

const AUTH = { authorization: "Bearer valid-token" };
const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

/** An instance on a fixed port that can stop and start again; `/v1/fail` answers 502 when `failing`. */
function instance(name: string, port: number) {
  const sockets = new Set<Socket>();
  const state = { failing: false, served: 0 };
  let server: http.Server | null = null;
  const start = async () => {
    server = http.createServer((req, res) => {
      if (req.url !== "/health") state.served++;
      if (state.failing && req.url !== "/health") return void res.writeHead(502).end();
      res.writeHead(200).end(name);
    });
    server.on("connection", (s: Socket) => {
      sockets.add(s);
      s.once("close", () => sockets.delete(s));
    });
    await new Promise<void>((r) => server!.listen(port, "127.0.0.1", r));
  };
  const stop = () => {
    server?.close();
    for (const s of sockets) s.destroy();
    server = null;
  };
  closers.push(stop);
  return { state, start, stop, url: `http://127.0.0.1:${port}` };
}

function configFor(urls: string[]): Record<string, unknown> {
  return testConfig(urls[0]!, {
    upstreams: {
      docs: {
        endpoints: urls.map((url) => ({ url })),
        timeout_ms: 2_000,
        outlier_detection: { consecutive_failures: 2, base_ejection_ms: 60_000 },
        health_check: {
          path: "/health",
          interval_ms: 100,
          timeout_ms: 100,
          healthy_threshold: 1,
          unhealthy_threshold: 1,
        },
      },
    },
    rate_limits: {
      classes: { read: { match: { methods: ["GET"] }, windows: [{ limit: 100_000, window_s: 60 }] } },
      anonymous: { windows: [{ limit: 100, window_s: 60 }] },
    },
  });
}

async function gatewayFor(urls: string[]): Promise<TestGateway> {
  const gw = await startGateway(configFor(urls));
  closers.push(() => gw.close());
  return gw;
}

/** Instances a and b behind a gateway, b ejected by two 502s to calls while its probes pass. */
async function withBEjected() {
  const a = instance("a", await freePort());
  const b = instance("b", await freePort());
  await a.start();
  await b.start();
  const gw = await gatewayFor([a.url, b.url]);
  b.state.failing = true;
  for (let i = 0; i < 6; i++) await request(`${gw.url}/v1/x`, { headers: AUTH });
  const bName = `127.0.0.1:${new URL(b.url).port}`;
  expect(await ejected(gw, bName)).toBe(true);
  return { a, b, gw, bName };
}

async function ejected(gw: TestGateway, endpoint: string): Promise<boolean> {
  const { upstreams } = JSON.parse((await request(`${gw.adminUrl}/upstreams`)).body) as {
    upstreams: Record<string, { endpoints: Array<{ endpoint: string; ejected: boolean; healthy: boolean }> }>;
  };
  return upstreams.docs!.endpoints.find((e) => e.endpoint === endpoint)!.ejected;
}

describe("an ejected endpoint", () => {
  it("that was down returns as soon as its probes pass again, long before its 60 s ejection ends", async () => {
    const { b, gw, bName } = await withBEjected();
    // Then it goes down (its probes fail) and comes back healthy, as a restarted instance does.
    b.stop();
    await new Promise((r) => setTimeout(r, 500));
    b.state.failing = false;
    b.state.served = 0;
    await b.start();
    const deadline = Date.now() + 5_000;
    while (b.state.served === 0 && Date.now() < deadline) {
      await request(`${gw.url}/v1/x`, { headers: AUTH });
    }
    expect(b.state.served).toBeGreaterThan(0);
    expect(await ejected(gw, bName)).toBe(false);
  });

  it("whose probes kept passing serves its ejection out", async () => {
    const { b, gw, bName } = await withBEjected();
    b.state.failing = false;
    b.state.served = 0;
    // A second of probes passing: still ejected, no call reaches it.
    for (let i = 0; i < 20; i++) {
      await request(`${gw.url}/v1/x`, { headers: AUTH });
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(b.state.served).toBe(0);
    expect(await ejected(gw, bName)).toBe(true);
  });

  it("stays ejected across a reload that keeps it by name in a changed upstream (SPEC §7)", async () => {
    const { a, b, gw, bName } = await withBEjected();
    b.state.failing = false;
    b.state.served = 0;
    const c = instance("c", await freePort());
    await c.start();
    const file = path.join(mkdtempSync(path.join(tmpdir(), "gw-ejected-reload-")), "gateway.yaml");
    writeFileSync(file, stringify(configFor([a.url, b.url, c.url])));
    expect(await gw.gateway.reload(file)).toBe(true);
    for (let i = 0; i < 12; i++) await request(`${gw.url}/v1/x`, { headers: AUTH });
    expect(b.state.served).toBe(0);
    expect(c.state.served).toBeGreaterThan(0);
    expect(await ejected(gw, bName)).toBe(true);
  });
});
