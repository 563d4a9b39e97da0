/**
 * An upstream that destroys its connection mid-exchange: before its response head the client gets
 * the catalogue's 502 `Bad gateway` (with the rate-limit headers, never the upstream's address);
 * after it, the client's connection is cut, so a short body never looks complete. Both count in
 * `gateway_upstream_errors_total{reason="reset"}` and write an access line.
 */
import http, { type Server } from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import { captureLog } from "../helpers/access-lines.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { waitFor } from "../helpers/redis-server.js";

let upstream: { server: Server; url: string };
let gw: TestGateway;
const log = captureLog();
const auth = { authorization: "Bearer valid-token" };

beforeAll(async () => {
  upstream = await listen((req, res) => {
    if (req.url === "/v1/reset-before-head") {
      req.socket.destroy();
      return;
    }
    // /v1/reset-mid-body: a head and part of a chunked body, then the connection goes.
    res.writeHead(200, { "content-type": "text/plain" });
    res.write("first half, ", () => res.socket?.destroy());
  });
  gw = await startGateway(testConfig(upstream.url), { logger: log.logger });
});

afterAll(async () => {
  await gw.close();
  await closeServer(upstream.server);
});

async function resets(): Promise<number> {
  const text = (await request(`${gw.adminUrl}/metrics`)).body;
  const m = /^gateway_upstream_errors_total\{upstream="docs",reason="reset"\} (\d+)$/m.exec(text);
  return Number(m?.[1] ?? 0);
}

it("answers 502 Bad gateway when the upstream resets before its response head", async () => {
  const before = await resets();
  const res = await request(`${gw.url}/v1/reset-before-head`, { headers: auth });
  expect(res.status).toBe(502);
  expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
  expect(JSON.parse(res.body)).toEqual({ error: { code: 502, message: "Bad gateway" } });
  expect(res.body).not.toContain("127.0.0.1");
  expect(res.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
  expect(res.headers["x-ratelimit-resource"]).toBe("read");
  expect(res.headers["x-ratelimit-remaining"]).toMatch(/^\d+$/);
  expect(await resets()).toBe(before + 1);
  expect(log.accessLines(gw).at(-1)).toMatchObject({ status: 502, error: "bad_gateway", class: "read" });
});

it("cuts the client's connection when the upstream resets mid-body", async () => {
  const before = await resets();
  // Whatever of the head and first chunk got through, the response never ends as if complete.
  const outcome = await new Promise<{ body: string; ended: boolean; error: string }>((resolve) => {
    let body = "";
    const req = http.get(`${gw.url}/v1/reset-mid-body`, { headers: auth }, (res) => {
      expect(res.statusCode).toBe(200);
      res.setEncoding("utf8").on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ body, ended: true, error: "" }));
      res.on("error", (err) => resolve({ body, ended: false, error: err.message }));
    });
    req.on("error", (err) => resolve({ body, ended: false, error: err.message }));
  });
  expect(outcome.ended).toBe(false);
  expect(outcome.error).toMatch(/^(aborted|socket hang up|read ECONNRESET)$/);
  expect("first half, ".startsWith(outcome.body)).toBe(true);
  expect(await resets()).toBe(before + 1);
});

/**
 * A response the gateway cuts because the upstream reset is the upstream's failure: 502 and
 * `error: "bad_gateway"` in the access line, not a client abort (499, `aborted: true`).
 */
it("logs a mid-body upstream reset as the upstream's failure, not as a client abort", async () => {
  await new Promise<void>((resolve) => {
    const req = http.get(`${gw.url}/v1/reset-mid-body`, { headers: auth }, (res) => {
      res.resume().on("error", () => resolve());
    });
    req.on("error", () => resolve());
  });
  await waitFor("the access line", async () => log.accessLines(gw).at(-1)?.path === "/v1/reset-mid-body");
  const line = log.accessLines(gw).at(-1)!;
  expect(line.aborted).toBeUndefined();
  expect(line.status).not.toBe(499);
  expect(line.error).toBe("bad_gateway");
});
