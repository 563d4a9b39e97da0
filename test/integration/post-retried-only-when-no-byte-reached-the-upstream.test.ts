/**
 * SPEC §17: a failure to connect is retried for any method, since no byte of the request reached
 * the upstream (nginx and Envoy do the same), with the body replayed; a POST that reached an
 * upstream is never sent twice (a reset after its bytes arrived, or a 502 of its own, is the
 * client's answer).
 */
import type { IncomingMessage, Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, REFUSED_PORT, request } from "../helpers/http.js";

const AUTH = { authorization: "Bearer valid-token", "content-type": "text/plain" };
let live: { server: Server; url: string };
/** Bodies the live endpoint received, in order. */
const received: string[] = [];

function read(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString()));
  });
}

beforeAll(async () => {
  live = await listen(async (req, res) => {
    const body = await read(req);
    received.push(body);
    if (req.url === "/v1/reset") return void req.socket.destroy();
    if (req.url === "/v1/busy") return void res.writeHead(502).end("busy");
    res.writeHead(201).end(`created ${body}`);
  });
});
afterAll(() => closeServer(live.server));

describe("a POST to a pool with a dead endpoint", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway(
      testConfig(live.url, {
        upstreams: {
          docs: {
            // Round robin: every other first try goes to the endpoint that refuses connections.
            endpoints: [{ url: `http://127.0.0.1:${REFUSED_PORT}` }, { url: live.url }],
            outlier_detection: { consecutive_failures: 0 },
            timeout_ms: 2_000,
          },
        },
        routes: [
          { prefix: "/v1", upstream: "docs", retries: { attempts: 1, backoff: { base_ms: 1, max_ms: 2 } } },
        ],
        rate_limits: {
          classes: { write: { match: { methods: ["POST"] }, windows: [{ limit: 1000, window_s: 60 }] } },
          anonymous: { windows: [{ limit: 100, window_s: 60 }] },
        },
      }),
    );
  });
  afterAll(() => gw.close());

  it("retries a refused connection on the live endpoint, body replayed, and sends each POST once", async () => {
    received.length = 0;
    const answers = [];
    for (let i = 0; i < 12; i++) {
      answers.push(await request(`${gw.url}/v1/items`, { method: "POST", headers: AUTH, body: `item-${i}` }));
    }
    expect(answers.map((a) => a.status)).toEqual(Array(12).fill(201));
    expect(answers.map((a) => a.body)).toEqual(answers.map((_, i) => `created item-${i}`));
    expect(received).toEqual(answers.map((_, i) => `item-${i}`));
  });

  it("never sends again a POST whose bytes reached the upstream: a reset and a 502 are the answer", async () => {
    received.length = 0;
    const statuses: number[] = [];
    // Enough calls that some go first to the live endpoint (the others are retried to it).
    for (let i = 0; i < 4; i++) {
      statuses.push(
        (await request(`${gw.url}/v1/reset`, { method: "POST", headers: AUTH, body: `r${i}` })).status,
      );
      statuses.push(
        (await request(`${gw.url}/v1/busy`, { method: "POST", headers: AUTH, body: `b${i}` })).status,
      );
    }
    expect(statuses).toEqual(Array(4).fill([502, 502]).flat());
    expect([...received].sort()).toEqual(["b0", "b1", "b2", "b3", "r0", "r1", "r2", "r3"]);
  });
});
