/**
 * SPEC §7 "A reload never cuts a call": a call in flight when a reload applies finishes on the
 * configuration it started with (a slow answer, a streamed body, a WebSocket), however long it
 * lasts, even when the reload replaces its upstream; the replaced configuration's connections close
 * once its last call ends. What a reload does not change it keeps: an upstream whose endpoints and
 * connections are unchanged keeps its calls in flight (`max_in_flight` keeps counting them), and so
 * does one whose other endpoints changed. SPEC §17: a route's `timeout_ms` longer than its
 * upstream's is honoured.
 */
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import http from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { stringify } from "yaml";
import { childConfig, spawnGateway } from "../helpers/child-gateway.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { RedisServer } from "../helpers/redis-server.js";
import { createPki } from "../helpers/tls.js";

const AUTH = { authorization: "Bearer valid-token" };
const dir = mkdtempSync(path.join(tmpdir(), "gw-reload-cuts-"));
let fileNo = 0;

/** Writes `config` to a new file and reloads `gw` from it (what SIGHUP does). */
async function reloadWith(gw: TestGateway, config: Record<string, unknown>): Promise<void> {
  const file = path.join(dir, `config-${++fileNo}.yaml`);
  writeFileSync(file, stringify(config));
  expect(await gw.gateway.reload(file)).toBe(true);
}

/** An upstream whose handler the test drives; it records the sockets it was connected with. */
interface Origin {
  server: Server;
  url: string;
  sockets: Set<Socket>;
}

async function origin(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Origin> {
  const sockets = new Set<Socket>();
  const server = http.createServer(handler);
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  });
  const { url } = await listen(server);
  return { server, url, sockets };
}

/** Resolves when `pred` holds, checked on each event-loop turn (bounded by `ms`). */
async function until(pred: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setImmediate(r));
  }
}

let slow: Origin;
let other: Origin;
/** Calls the slow origin holds, released by the test. */
const held: ServerResponse[] = [];

beforeAll(async () => {
  slow = await origin((req, res) => {
    if (req.url?.startsWith("/v1/stream")) {
      // Eight chunks, 100 ms apart: a reload lands in the middle.
      res.writeHead(200, { "content-type": "text/plain" });
      let n = 0;
      const t = setInterval(() => {
        res.write(`chunk${++n};`);
        if (n === 8) {
          clearInterval(t);
          res.end();
        }
      }, 100);
      return;
    }
    if (req.url?.startsWith("/v1/hold")) {
      held.push(res);
      return;
    }
    if (req.url?.startsWith("/v1/late")) {
      setTimeout(() => res.writeHead(200).end("late answer"), 1_200);
      return;
    }
    res.writeHead(200).end("slow origin");
  });
  other = await origin((_req, res) => res.writeHead(200).end("other origin"));
});

afterAll(async () => {
  for (const r of held) r.end();
  await closeServer(slow.server);
  await closeServer(other.server);
  rmSync(dir, { recursive: true, force: true });
});

describe("a reload that replaces the upstream", () => {
  let gw: TestGateway;
  const first = () => testConfig(slow.url, { listen: { host: "127.0.0.1", port: 0, grace_ms: 100 } });
  const second = () => testConfig(other.url, { listen: { host: "127.0.0.1", port: 0, grace_ms: 100 } });

  beforeAll(async () => {
    gw = await startGateway(first());
  });
  afterAll(() => gw.close());

  it("lets a slow answer finish on the old configuration, long past grace_ms, then closes its connections", async () => {
    const pending = request(`${gw.url}/v1/hold`, { headers: AUTH });
    await until(() => held.length === 1);
    await reloadWith(gw, second());
    // New calls go to the new upstream while the old one is still answering.
    expect((await request(`${gw.url}/v1/x`, { headers: AUTH })).body).toBe("other origin");
    // grace_ms is 100: the old timer would have cut the call here.
    await new Promise((r) => setTimeout(r, 400));
    expect(slow.sockets.size).toBeGreaterThan(0);
    held.shift()!.writeHead(200).end("held answer");
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.body).toBe("held answer");
    // The replaced configuration's pool closes once its last call ended.
    await until(() => slow.sockets.size === 0);
    await reloadWith(gw, first());
  });

  it("relays a streamed body whole across a reload", async () => {
    const pending = request(`${gw.url}/v1/stream`, { headers: AUTH });
    await until(() => slow.sockets.size > 0);
    await new Promise((r) => setTimeout(r, 250));
    await reloadWith(gw, second());
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.body).toBe("chunk1;chunk2;chunk3;chunk4;chunk5;chunk6;chunk7;chunk8;");
    await reloadWith(gw, first());
  });
});

describe("a WebSocket across a reload", () => {
  it("keeps echoing after its upstream was replaced", async () => {
    const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await once(wss, "listening");
    wss.on("connection", (ws) => ws.on("message", (d) => ws.send(`echo:${d.toString()}`)));
    const wsUrl = `http://127.0.0.1:${(wss.address() as { port: number }).port}`;
    const gw = await startGateway(
      testConfig(wsUrl, { listen: { host: "127.0.0.1", port: 0, grace_ms: 100 } }),
    );
    try {
      const ws = new WebSocket(`${gw.url.replace(/^http/, "ws")}/v1/socket`, { headers: AUTH });
      await once(ws, "open");
      const reply = () => once(ws, "message").then(([d]) => String(d));
      ws.send("before");
      expect(await reply()).toBe("echo:before");
      await reloadWith(gw, testConfig(other.url, { listen: { host: "127.0.0.1", port: 0, grace_ms: 100 } }));
      await new Promise((r) => setTimeout(r, 300));
      ws.send("after");
      expect(await reply()).toBe("echo:after");
      ws.close();
      await once(ws, "close");
    } finally {
      await gw.close();
      for (const c of wss.clients) c.terminate();
      await new Promise((r) => wss.close(r));
    }
  });
});

describe("what a reload keeps", () => {
  const limited = (url: string | string[], extra: Record<string, unknown> = {}) =>
    testConfig(typeof url === "string" ? url : url[0]!, {
      upstreams: {
        docs: {
          ...(typeof url === "string" ? { url } : { endpoints: url.map((u) => ({ url: u })) }),
          timeout_ms: 5_000,
          max_in_flight: 2,
          ...extra,
        },
      },
    });

  it.each([
    ["an unchanged upstream (only its timeout changed)", false, { timeout_ms: 6_000 }],
    ["an upstream that gained an endpoint", true, {}],
  ] as const)("%s keeps counting the calls in flight against max_in_flight", async (_name, grows, extra) => {
    const gw = await startGateway(limited(slow.url));
    try {
      const calls = [1, 2].map(() => request(`${gw.url}/v1/hold`, { headers: AUTH }));
      await until(() => held.length === 2);
      await reloadWith(gw, limited(grows ? [slow.url, other.url] : slow.url, extra));
      const { upstreams } = JSON.parse((await request(`${gw.adminUrl}/upstreams`)).body) as {
        upstreams: Record<string, { in_flight: number; concurrency_limit: number }>;
      };
      expect(upstreams.docs!.concurrency_limit).toBe(2);
      expect(upstreams.docs!.in_flight).toBe(2);
      const third = await request(`${gw.url}/v1/x`, { headers: AUTH });
      expect(third.status).toBe(503);
      for (const r of held.splice(0)) r.writeHead(200).end("ok");
      expect((await Promise.all(calls)).map((r) => r.status)).toEqual([200, 200]);
      expect((await request(`${gw.url}/v1/x`, { headers: AUTH })).status).toBe(200);
    } finally {
      await gw.close();
    }
  });
});

describe("a route's timeout_ms", () => {
  it("may be longer than its upstream's: a 1.2 s answer under a 500 ms upstream timeout and a 5 s route", async () => {
    const gw = await startGateway(
      testConfig(slow.url, {
        upstreams: { docs: { url: slow.url, timeout_ms: 500 } },
        routes: [{ prefix: "/v1", upstream: "docs", timeout_ms: 5_000 }],
      }),
    );
    try {
      const res = await request(`${gw.url}/v1/late`, { headers: AUTH });
      expect(res.status).toBe(200);
      expect(res.body).toBe("late answer");
    } finally {
      await gw.close();
    }
  });

  it("without a route timeout, the upstream's applies (504)", async () => {
    const gw = await startGateway(
      testConfig(slow.url, { upstreams: { docs: { url: slow.url, timeout_ms: 500 } } }),
    );
    try {
      expect((await request(`${gw.url}/v1/late`, { headers: AUTH })).status).toBe(504);
    } finally {
      await gw.close();
    }
  });
});

describe("a TLS upstream across a reload", () => {
  it("keeps its connections when its TLS material is unchanged, and makes new ones when a file's content changes", async () => {
    const pki = createPki();
    const connections: TLSSocket[] = [];
    const server = https.createServer({ cert: pki.serverCert, key: pki.serverKey }, (_req, res) =>
      res.end("tls origin"),
    );
    server.on("secureConnection", (s: TLSSocket) => connections.push(s));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
    const caCopy = path.join(dir, "ca-copy.pem");
    writeFileSync(caCopy, pki.ca);
    const config = (extra: Record<string, unknown>) =>
      testConfig(url, {
        upstreams: { docs: { url, tls: { ca_file: caCopy }, timeout_ms: 2_000, ...extra } },
        routes: [{ prefix: "/v1", upstream: "docs" }],
      });
    const gw = await startGateway(config({}));
    try {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const get = () => request(`${gw.url}/v1/x`, { headers: AUTH, agent });
      expect((await get()).body).toBe("tls origin");
      await reloadWith(gw, config({ timeout_ms: 3_000 }));
      expect((await get()).body).toBe("tls origin");
      expect(connections.length).toBe(1);
      // The same CA with a trailing comment is other file content: new connections.
      writeFileSync(caCopy, Buffer.concat([pki.ca, Buffer.from("\n")]));
      await reloadWith(gw, config({ timeout_ms: 3_000 }));
      expect((await get()).body).toBe("tls origin");
      expect(connections.length).toBe(2);
      agent.destroy();
    } finally {
      await gw.close();
      server.closeAllConnections();
      server.close();
      pki.remove();
    }
  });
});

describe("a reload by signal and by the watch, in a real process", () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await RedisServer.start();
  });
  afterAll(() => redis.destroy());

  it.each([
    ["SIGHUP with two workers", "workers"],
    ["reload.watch", "watch"],
  ] as const)("%s: calls held across it get their whole answer", async (_name, how) => {
    const extra = (): Record<string, unknown> =>
      how === "workers"
        ? {
            workers: 2,
            rate_limits: {
              store: { redis: { url: redis.url, key_prefix: `reload-cuts-${how}` } },
              classes: { read: { match: { methods: ["GET"] }, windows: [{ limit: 1000, window_s: 3600 }] } },
              anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
            },
          }
        : { reload: { watch: true } };
    const gw = await spawnGateway((ports) => childConfig(slow.url, ports, extra(), { grace_ms: 100 }));
    try {
      const before = held.length;
      // With workers, node:cluster hands connections out in turn: three calls busy both.
      const calls = [1, 2, 3].map(() => request(`${gw.url}/v1/hold`, { headers: AUTH }));
      await until(() => held.length === before + 3, 10_000);
      const ports = { apiPort: gw.apiPort, adminPort: gw.adminPort };
      gw.writeConfig(childConfig(other.url, ports, extra(), { grace_ms: 100 }));
      if (how === "workers") gw.signal("SIGHUP");
      await gw.waitForLine((l) => l.msg === "configuration reloaded", 10_000);
      expect((await request(`${gw.url}/v1/x`, { headers: AUTH })).body).toBe("other origin");
      await new Promise((r) => setTimeout(r, 300)); // past grace_ms
      for (const r of held.splice(before)) r.writeHead(200).end("held answer");
      const answers = await Promise.all(calls);
      expect(answers.map((a) => `${a.status} ${a.body}`)).toEqual(Array(3).fill("200 held answer"));
    } finally {
      await gw.dispose();
    }
  });
});
