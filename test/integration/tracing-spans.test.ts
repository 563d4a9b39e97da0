/**
 * SPEC §13 spans, as a real OTLP/HTTP receiver decodes them from the exporter's protobuf bodies: a
 * client's `traceparent` (and `tracestate`) is continued and its trace id is on every span of the
 * request; the upstream's `traceparent` names the gateway's CLIENT span as parent; the SERVER span
 * carries the semantic-convention and `gateway.ratelimit.*` attributes, the values the access line
 * shows, and nothing secret; 401, 429 and 502 are recorded with their status (only 5xx an error);
 * a WebSocket handshake gets its spans; spans reach the collector within 5 s of ending.
 */
import type { IncomingHttpHeaders } from "node:http";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { captureLog } from "../helpers/access-lines.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { REFUSED_PORT, closeServer, listen, request } from "../helpers/http.js";
import {
  KIND,
  STATUS,
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedSpan,
} from "../helpers/otlp-receiver.js";

const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";
const traceparent = (traceId: string, flags = "01") => `00-${traceId}-${CLIENT_SPAN}-${flags}`;
/** A fresh trace id per test, so each test finds its own spans. */
let seq = 0;
const newTraceId = () => `${CLIENT_TRACE.slice(0, 24)}${(++seq).toString(16).padStart(8, "0")}`;

let rx: OtlpReceiver;
let upstream: Awaited<ReturnType<typeof listen>>;
let wss: WebSocketServer;
let gw: TestGateway;
const log = captureLog();
/** Headers the upstream (HTTP or WebSocket) received, by path. */
const seen = new Map<string, IncomingHttpHeaders>();

/** The spans of `traceId`, once `n` have arrived. */
function spansOf(traceId: string, n: number): Promise<ReceivedSpan[]> {
  return rx
    .waitFor((all) => all.filter((s) => s.traceId === traceId).length >= n)
    .then((all) => all.filter((s) => s.traceId === traceId));
}

const server = (spans: ReceivedSpan[]) => spans.find((s) => s.kind === KIND.SERVER)!;
const client = (spans: ReceivedSpan[]) => spans.find((s) => s.kind === KIND.CLIENT)!;

beforeAll(async () => {
  rx = await startOtlpReceiver();
  upstream = await listen((req, res) => {
    seen.set(req.url!.split("?")[0]!, req.headers);
    const status = /\/status\/(\d{3})$/.exec(req.url ?? "")?.[1];
    res.writeHead(status === undefined ? 200 : Number(status), { "content-type": "text/plain" });
    res.end("ok");
  });
  wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await once(wss, "listening");
  wss.on("connection", (ws, req) => {
    seen.set(req.url!, req.headers);
    ws.on("message", (m) => ws.send(`echo:${m.toString()}`));
  });
  gw = await startGateway(
    testConfig(upstream.url, {
      upstreams: {
        docs: { url: upstream.url, timeout_ms: 2000 },
        ws: { url: `http://127.0.0.1:${(wss.address() as { port: number }).port}` },
        dead: { url: `http://127.0.0.1:${REFUSED_PORT}`, connect_timeout_ms: 1000 },
      },
      routes: [
        { prefix: "/v1", upstream: "docs" },
        { prefix: "/ws", upstream: "ws" },
        { prefix: "/dead", upstream: "dead" },
      ],
      rate_limits: {
        classes: {
          tight: { match: { paths: ["/v1/tight"] }, windows: [{ limit: 1, window_s: 3600 }] },
          read: { match: { methods: ["GET"] }, windows: [{ limit: 1000, window_s: 3600 }] },
        },
        anonymous: { windows: [{ limit: 100, window_s: 3600 }] },
        // Every caller on a plan, so the SERVER span shows it (the anonymous class has none).
        default_plan: "free",
        plans: { free: {} },
      },
      // The default export delay (1 s): the first test checks spans arrive within 5 s.
      tracing: { endpoint: rx.endpoint },
      log: { level: "info" },
    }),
    { logger: log.logger },
  );
});

afterAll(async () => {
  await gw?.close();
  wss?.close();
  await Promise.all([upstream && closeServer(upstream.server), rx?.close()]);
});

describe("a client's trace context", () => {
  it("is continued: its trace id on every span, the upstream's parent is the CLIENT span, within 5 s", async () => {
    const traceId = newTraceId();
    const r = await request(`${gw.url}/v1/items`, {
      headers: {
        authorization: "Bearer valid-token",
        traceparent: traceparent(traceId),
        tracestate: "vendor=opaque,other=x",
      },
    });
    expect(r.status).toBe(200);
    const spans = await spansOf(traceId, 2);
    expect(spans).toHaveLength(2);
    const [srv, cli] = [server(spans), client(spans)];
    expect(srv.parentSpanId).toBe(CLIENT_SPAN);
    expect(cli.parentSpanId).toBe(srv.spanId);
    expect(spans.every((s) => s.traceState === "vendor=opaque,other=x")).toBe(true);
    expect(spans.every((s) => (s.flags & 0xff) === 1)).toBe(true);
    const up = seen.get("/v1/items")!;
    expect(up.traceparent).toBe(`00-${traceId}-${cli.spanId}-01`);
    expect(up.tracestate).toBe("vendor=opaque,other=x");
    for (const s of spans) expect(s.receivedAtMs - Number(s.endNs / 1_000_000n)).toBeLessThan(5000);
    expect(rx.contentTypes.every((t) => t === "application/x-protobuf")).toBe(true);
  });

  it("is started afresh without a traceparent, and the upstream still gets the CLIENT span as parent", async () => {
    const r = await request(`${gw.url}/v1/fresh`, { headers: { authorization: "Bearer valid-token" } });
    expect(r.status).toBe(200);
    const up = seen.get("/v1/fresh")!;
    const [, traceId, parent, flags] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/.exec(
      String(up.traceparent),
    )!;
    expect(flags).toBe("01");
    const spans = await spansOf(traceId!, 2);
    expect(server(spans).parentSpanId).toBe("");
    expect(client(spans).spanId).toBe(parent);
  });
});

describe("the SERVER span", () => {
  it("has the SPEC §13 attributes, the access line's values and ids, and nothing secret", async () => {
    const traceId = newTraceId();
    const r = await request(`${gw.url}/v1/x/../attrs/./one?access_token=qs-secret-123&q=1`, {
      headers: { authorization: "Bearer valid-token", traceparent: traceparent(traceId) },
    });
    expect(r.status).toBe(200);
    const spans = await spansOf(traceId, 2);
    const srv = server(spans);
    expect(srv.name).toBe("GET /v1");
    expect(srv.attributes).toEqual({
      "http.request.method": "GET",
      "url.scheme": "http",
      "http.route": "/v1",
      "url.path": "/v1/attrs/one",
      "http.response.status_code": 200,
      "client.address": "127.0.0.1",
      "network.protocol.version": "1.1",
      "gateway.ratelimit.class": "read",
      "gateway.ratelimit.plan": "free",
      "gateway.ratelimit.decision": "allowed",
      "gateway.ratelimit.remaining": Number(r.headers["x-ratelimit-remaining"]),
      "gateway.identity": "alice",
    });
    expect(srv.statusCode).toBe(STATUS.UNSET);
    expect(srv.resource["service.name"]).toBe("gateway");
    const cli = client(spans);
    expect(cli.name).toBe("GET");
    expect(cli.attributes).toEqual({
      "http.request.method": "GET",
      "server.address": "127.0.0.1",
      "server.port": upstream.port,
      "http.response.status_code": 200,
    });
    const line = log.accessLines(gw).find((l) => l.traceId === traceId)!;
    expect(line).toMatchObject({ spanId: srv.spanId, identity: "alice", path: "/v1/attrs/one", status: 200 });
    const everything = JSON.stringify(spans.map((s) => [s.name, s.attributes, s.resource]));
    for (const secret of ["valid-token", "qs-secret-123", "access_token", "Bearer", "?"]) {
      expect(everything).not.toContain(secret);
    }
  });

  it("records a 401, a 429 and a 502 with their status; only the 502 is an error", async () => {
    const ids = { unauth: newTraceId(), limited: newTraceId(), dead: newTraceId(), none: newTraceId() };
    const send = (path: string, traceId: string, token?: string) =>
      request(`${gw.url}${path}`, {
        headers: {
          traceparent: traceparent(traceId),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
      });
    expect((await send("/v1/items", ids.unauth)).status).toBe(401);
    expect((await send("/v1/tight", newTraceId(), "reader-token")).status).toBe(200);
    expect((await send("/v1/tight", ids.limited, "reader-token")).status).toBe(429);
    expect((await send("/dead/x", ids.dead, "valid-token")).status).toBe(502);
    expect((await send("/nowhere", ids.none, "valid-token")).status).toBe(404);

    const unauth = server(await spansOf(ids.unauth, 1));
    expect(unauth).toMatchObject({ name: "GET /v1", statusCode: STATUS.UNSET });
    expect(unauth.attributes).toMatchObject({
      "http.response.status_code": 401,
      "gateway.ratelimit.class": "anonymous",
      "gateway.ratelimit.decision": "allowed",
      "gateway.error.code": "auth_required",
    });
    expect(unauth.attributes).not.toHaveProperty("gateway.identity");

    const limited = server(await spansOf(ids.limited, 1));
    expect(limited).toMatchObject({ name: "GET /v1", statusCode: STATUS.UNSET });
    expect(limited.attributes).toMatchObject({
      "http.response.status_code": 429,
      "gateway.ratelimit.class": "tight",
      "gateway.ratelimit.decision": "limited",
      "gateway.ratelimit.remaining": 0,
      "gateway.error.code": "rate_limited",
      "gateway.identity": "bob",
    });

    const dead = await spansOf(ids.dead, 2);
    expect(server(dead)).toMatchObject({ name: "GET /dead", statusCode: STATUS.ERROR });
    expect(server(dead).attributes).toMatchObject({
      "http.response.status_code": 502,
      "error.type": "502",
      "gateway.error.code": "bad_gateway",
    });
    expect(client(dead)).toMatchObject({ statusCode: STATUS.ERROR, parentSpanId: server(dead).spanId });
    expect(client(dead).attributes).toMatchObject({ "error.type": "connect" });

    const none = server(await spansOf(ids.none, 1));
    expect(none.name).toBe("GET");
    expect(none.attributes).not.toHaveProperty("http.route");
    expect(none.attributes["http.response.status_code"]).toBe(404);
  });

  it("is an error for an upstream's 5xx, not for its 4xx (the CLIENT span is an error for both)", async () => {
    const [t503, t404] = [newTraceId(), newTraceId()];
    const auth = { authorization: "Bearer valid-token" };
    await request(`${gw.url}/v1/status/503`, { headers: { ...auth, traceparent: traceparent(t503) } });
    await request(`${gw.url}/v1/status/404`, { headers: { ...auth, traceparent: traceparent(t404) } });
    const [s503, s404] = [await spansOf(t503, 2), await spansOf(t404, 2)];
    expect(server(s503).statusCode).toBe(STATUS.ERROR);
    expect(server(s404).statusCode).toBe(STATUS.UNSET);
    expect(client(s503)).toMatchObject({ statusCode: STATUS.ERROR, attributes: { "error.type": "503" } });
    expect(client(s404)).toMatchObject({ statusCode: STATUS.ERROR, attributes: { "error.type": "404" } });
  });
});

describe("a WebSocket handshake", () => {
  it("gets a SERVER span (101) and a CLIENT span the upstream sees as parent", async () => {
    const traceId = newTraceId();
    const ws = new WebSocket(`${gw.url.replace("http", "ws")}/ws/chat`, {
      headers: { authorization: "Bearer valid-token", traceparent: traceparent(traceId) },
    });
    await once(ws, "open");
    ws.send("hi");
    const [reply] = (await once(ws, "message")) as [Buffer];
    expect(reply.toString()).toBe("echo:hi");
    ws.close();
    const spans = await spansOf(traceId, 2);
    const [srv, cli] = [server(spans), client(spans)];
    expect(srv).toMatchObject({ name: "GET /ws", parentSpanId: CLIENT_SPAN });
    expect(srv.attributes["http.response.status_code"]).toBe(101);
    expect(cli).toMatchObject({ name: "GET", parentSpanId: srv.spanId, statusCode: STATUS.UNSET });
    expect(cli.attributes["http.response.status_code"]).toBe(101);
    expect(seen.get("/ws/chat")!.traceparent).toBe(`00-${traceId}-${cli.spanId}-01`);
  });
});
