/**
 * SPEC §17 body limits over HTTP/2: per stream, never the session. A `content-length` past the
 * limit is 413 from the head; a body without one is cut when it grows past it (413, its upstream
 * request aborted); the same connection keeps serving.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { h2connect, h2request } from "../helpers/h2.js";
import { closeServer, listen } from "../helpers/http.js";
import { waitFor } from "../helpers/redis-server.js";
import { createPki, tlsListen, type TestPki } from "../helpers/tls.js";

const AUTH = { authorization: "Bearer valid-token" };
let pki: TestPki;
let upstream: Awaited<ReturnType<typeof listen>>;
let gw: TestGateway;
let origin: string;
let open = 0;
let received = 0;

beforeAll(async () => {
  pki = createPki();
  upstream = await listen((req, res) => {
    received++;
    open++;
    res.on("close", () => open--);
    let size = 0;
    req.on("data", (c: Buffer) => (size += c.length));
    req.on("end", () => res.end(`size ${size}`));
  });
  gw = await startGateway(
    testConfig(upstream.url, {
      listen: tlsListen(pki, { max_body_bytes: 1000 }),
    }),
  );
  origin = `https://localhost:${gw.apiPort}`;
});

afterAll(async () => {
  await gw?.close();
  if (upstream !== undefined) await closeServer(upstream.server);
  pki?.remove();
});

describe("body limits over HTTP/2", () => {
  it("answer 413 per stream, by content-length and by a body that grows past the limit", async () => {
    const session = await h2connect(origin, { ca: pki.ca });
    const post = { ":method": "POST", ":path": "/v1/items", ...AUTH };
    const announced = await h2request(session, { ...post, "content-length": "1001" }, "x".repeat(1001));
    expect(announced.status).toBe(413);
    expect(announced.headers["x-ratelimit-resource"]).toBe("anonymous");
    expect(received).toBe(0);

    // No content-length: the body streams until it passes the limit.
    const grown = await new Promise<number>((resolve, reject) => {
      const stream = session.request(post);
      stream.on("response", (h) => resolve(Number(h[":status"])));
      stream.on("error", reject);
      stream.write("y".repeat(600));
      setTimeout(() => stream.write("y".repeat(600)), 50);
    });
    expect(grown).toBe(413);
    await waitFor("the cut upstream request closed", async () => open === 0, 3000);

    // The session is still usable.
    const small = await h2request(session, post, "z".repeat(10));
    expect(small.status).toBe(200);
    expect(small.body).toBe("size 10");
    session.close();
  });
});
