/**
 * SPEC §16-§17 in traces: each try of a proxied call is its own CLIENT span, child of the request's
 * SERVER span, naming the endpoint it went to (`server.address`, `server.port`); a refused try is an
 * error span, the one that answered carries its status.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { KIND, STATUS, startOtlpReceiver, type OtlpReceiver } from "../helpers/otlp-receiver.js";
import { freePort } from "../helpers/redis-server.js";

let rx: OtlpReceiver;
let upstream: Awaited<ReturnType<typeof listen>>;
let gw: TestGateway;
let refusedPort: number;

beforeAll(async () => {
  rx = await startOtlpReceiver();
  upstream = await listen((_req, res) => res.end("ok"));
  refusedPort = await freePort();
  gw = await startGateway(
    testConfig(upstream.url, {
      upstreams: {
        docs: {
          endpoints: [{ url: `http://127.0.0.1:${refusedPort}` }, { url: upstream.url }],
          timeout_ms: 2000,
        },
      },
      routes: [
        { prefix: "/v1", upstream: "docs", retries: { attempts: 1, backoff: { base_ms: 1, max_ms: 2 } } },
      ],
      tracing: { endpoint: rx.endpoint, sample_ratio: 1 },
    }),
  );
});

afterAll(async () => {
  await gw?.close();
  await Promise.all([upstream && closeServer(upstream.server), rx?.close()]);
});

describe("a retried call's trace", () => {
  it("has one CLIENT span per try, each naming its endpoint", async () => {
    const r = await request(`${gw.url}/v1/items`, { headers: { authorization: "Bearer valid-token" } });
    expect(r.status).toBe(200);
    const spans = await rx.waitFor((s) => s.filter((x) => x.kind === KIND.CLIENT).length >= 2, 10_000);
    const server = spans.find((s) => s.kind === KIND.SERVER)!;
    const clients = spans
      .filter((s) => s.kind === KIND.CLIENT && s.traceId === server.traceId)
      .sort((a, b) => Number(a.startNs - b.startNs));
    expect(clients).toHaveLength(2);
    for (const c of clients) {
      expect(c.parentSpanId).toBe(server.spanId);
      expect(c.attributes["server.address"]).toBe("127.0.0.1");
    }
    expect(clients[0]!.attributes["server.port"]).toBe(refusedPort);
    expect(clients[0]!.statusCode).toBe(STATUS.ERROR);
    expect(clients[0]!.attributes["error.type"]).toBe("connect");
    expect(clients[1]!.attributes["server.port"]).toBe(upstream.port);
    expect(clients[1]!.attributes["http.response.status_code"]).toBe(200);
  });
});
