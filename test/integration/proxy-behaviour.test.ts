/**
 * SPEC §5-§6 proxying: identity headers replace client copies, hop-by-hop removal, X-Forwarded-*,
 * X-Request-Id both ways, path normalisation before matching and forwarding, streaming in both
 * directions, and client aborts reaching the upstream; through the one upstream client.
 */
import http, {
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, closeServer, listen, rawRequest, request } from "../helpers/http.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";

let upstream: { server: Server; url: string };
let gw: TestGateway;
const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
/** Requests the upstream holds open, by test name. */
const held = new Map<string, { req: IncomingMessage; res: ServerResponse }>();
const heldEvents = new (await import("node:events")).EventEmitter();

beforeAll(async () => {
  upstream = await listen((req, res) => {
    seen.push({ url: req.url ?? "", headers: req.headers });
    const hold = req.headers["x-hold"];
    if (typeof hold === "string") {
      held.set(hold, { req, res });
      heldEvents.emit(hold);
      return;
    }
    if (req.url?.startsWith("/v1/hop")) {
      res.writeHead(200, {
        connection: "keep-alive, x-hop",
        "x-hop": "1",
        "keep-alive": "timeout=99",
        "x-end": "kept",
      });
      res.end("hop");
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ url: req.url }));
  });
});

afterAll(async () => {
  await closeServer(upstream.server);
});

const lastSeen = () => seen[seen.length - 1]!;

describe("the upstream client", () => {
  beforeAll(async () => {
    held.clear();
    gw = await startGateway(
      testConfig(upstream.url, {
        upstreams: {
          docs: { url: upstream.url, timeout_ms: 2000 },
          based: { url: `${upstream.url}/base/` },
        },
        routes: [
          { prefix: "/v1", upstream: "docs" },
          { prefix: "/v2", upstream: "based" },
        ],
      }),
    );
  });

  afterAll(async () => {
    await gw.close();
  });

  describe("upstream request headers", () => {
    it("replaces spoofed X-Auth-* with the token's identity and forwards Authorization unchanged", async () => {
      const res = await request(`${gw.url}/v1/user`, {
        headers: {
          authorization: "Bearer valid-token",
          "x-auth-subject": "admin",
          "x-auth-client-id": "root",
          "x-auth-scope": "everything",
        },
      });
      expect(res.status).toBe(200);
      const h = lastSeen().headers;
      expect(h["x-auth-subject"]).toBe("alice");
      expect(h["x-auth-client-id"]).toBe("web");
      expect(h["x-auth-scope"]).toBe("read write");
      expect(h.authorization).toBe("Bearer valid-token");
    });

    it("removes a client's X-Client-Cert-Subject on a plain listener (SPEC §12)", async () => {
      await request(`${gw.url}/v1/user`, {
        headers: { authorization: "Bearer valid-token", "x-client-cert-subject": "CN=admin" },
      });
      expect(lastSeen().headers["x-client-cert-subject"]).toBeUndefined();
    });

    it("removes a spoofed X-Auth-Subject when the token has no sub", async () => {
      await request(`${gw.url}/v1/user`, {
        headers: { authorization: "Bearer client-token", "x-auth-subject": "admin" },
      });
      const h = lastSeen().headers;
      expect(h["x-auth-subject"]).toBeUndefined();
      expect(h["x-auth-client-id"]).toBe("svc");
    });

    it("drops hop-by-hop headers, including those named by Connection", async () => {
      const raw = await rawRequest(
        Number(new URL(gw.url).port),
        "GET /v1/user HTTP/1.1\r\nHost: api.example\r\nAuthorization: Bearer valid-token\r\n" +
          "Connection: close, x-secret\r\nX-Secret: 1\r\nTE: trailers\r\nProxy-Authorization: Basic eA==\r\nKeep-Alive: 5\r\n\r\n",
      );
      expect(raw).toMatch(/^HTTP\/1.1 200/);
      const h = lastSeen().headers;
      expect(h["x-secret"]).toBeUndefined();
      expect(h["te"]).toBeUndefined();
      expect(h["proxy-authorization"]).toBeUndefined();
      expect(h["keep-alive"]).toBeUndefined();
    });

    it("a plain request that names Upgrade loses every hop-by-hop field too", async () => {
      // No `upgrade` token in Connection: Node hands this to the request listener, not `upgrade`.
      const raw = await rawRequest(
        Number(new URL(gw.url).port),
        "GET /v1/user HTTP/1.1\r\nHost: api.example\r\nAuthorization: Bearer valid-token\r\n" +
          "Upgrade: foo\r\nConnection: x-secret\r\nX-Secret: 1\r\n\r\n",
      );
      expect(raw).toMatch(/^HTTP\/1.1 200/);
      const h = lastSeen().headers;
      expect(h["x-secret"]).toBeUndefined();
      expect(h["upgrade"]).toBeUndefined();
      expect(h["connection"]).not.toMatch(/x-secret|upgrade/i);
    });

    it("answers Expect: 100-continue itself and does not forward the expectation", async () => {
      const req = http.request(`${gw.url}/v1/expect`, {
        method: "POST",
        headers: { authorization: "Bearer valid-token", expect: "100-continue", "content-length": 4 },
      });
      await once(req, "continue");
      req.end("body");
      const [res] = (await once(req, "response")) as [IncomingMessage];
      res.resume();
      expect(res.statusCode).toBe(200);
      expect(lastSeen().url).toBe("/v1/expect");
      expect(lastSeen().headers.expect).toBeUndefined();
    });

    it("sets X-Forwarded-For/-Proto/-Host and X-Request-Id", async () => {
      const res = await request(`${gw.url}/v1/user`, {
        headers: {
          authorization: "Bearer valid-token",
          "x-forwarded-for": "10.9.9.9",
          "x-request-id": "trace-1",
        },
      });
      const h = lastSeen().headers;
      expect(h["x-forwarded-for"]).toBe("10.9.9.9, 127.0.0.1");
      expect(h["x-forwarded-proto"]).toBe("http");
      expect(h["x-forwarded-host"]).toBe(new URL(gw.url).host);
      expect(h["x-request-id"]).toBe("trace-1");
      expect(res.headers["x-request-id"]).toBe("trace-1");
    });

    it("drops hop-by-hop headers of the upstream's response", async () => {
      const res = await request(`${gw.url}/v1/hop`, { headers: { authorization: "Bearer valid-token" } });
      expect(res.headers["x-hop"]).toBeUndefined();
      expect(res.headers["keep-alive"]).not.toBe("timeout=99");
      expect(res.headers["x-end"]).toBe("kept");
    });

    it("tells the client this connection's keep-alive timeout on a proxied answer, as on its own", async () => {
      const keepAlive = agent();
      try {
        const ask = (headers: Record<string, string>) =>
          request(`${gw.url}/v1/hop`, { headers, agent: keepAlive }).then((r) => r.headers);
        const proxied = await ask({ authorization: "Bearer valid-token" });
        const own = await ask({});
        // listen.keep_alive_timeout_ms: 5000 (the default), in seconds; the upstream's timeout=99 is gone.
        for (const h of [proxied, own]) {
          expect(h.connection).toBe("keep-alive");
          expect(h["keep-alive"]).toBe("timeout=5");
        }
        expect(proxied["x-end"]).toBe("kept");
        expect(own["www-authenticate"]).toBeDefined();
      } finally {
        keepAlive.destroy();
      }
      // A client that asks to close gets Connection: close, and no keep-alive timeout.
      const closing = await request(`${gw.url}/v1/hop`, {
        headers: { authorization: "Bearer valid-token", connection: "close" },
      });
      expect(closing.headers.connection).toBe("close");
      expect(closing.headers["keep-alive"]).toBeUndefined();
    });
  });

  it("appends the forwarded path and query to the upstream URL's own path", async () => {
    const res = await request(`${gw.url}/v2/x?q=1`, { headers: { authorization: "Bearer valid-token" } });
    expect(res.status).toBe(200);
    expect(lastSeen().url).toBe("/base/v2/x?q=1");
  });

  describe("path normalisation", () => {
    it.each([
      ["/v1/./search", "/v1/search"],
      ["/v1/%73earch", "/v1/%73earch"],
      ["/v1/x/../search", "/v1/search"],
      ["/v1/x/%2e%2e/search", "/v1/search"],
      ["/v1/search/", "/v1/search/"],
    ])("%s is classed as search and forwarded as %s", async (path, forwarded) => {
      const res = await rawRequest(
        Number(new URL(gw.url).port),
        `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer reader-token\r\nConnection: close\r\n\r\n`,
      );
      expect(res).toMatch(/^HTTP\/1.1 200/);
      expect(res).toMatch(/x-ratelimit-resource: search/i);
      expect(lastSeen().url).toBe(forwarded);
    });

    it.each(["/v1/../admin", "/v1/%2e%2e/admin", "/v1/x/%2E%2E/%2e%2e/admin", "/v10/search"])(
      "%s leaves the route and gets 404",
      async (path) => {
        const res = await rawRequest(
          Number(new URL(gw.url).port),
          `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer reader-token\r\nConnection: close\r\n\r\n`,
        );
        expect(res).toMatch(/^HTTP\/1.1 404/);
      },
    );
  });

  describe("streaming", () => {
    it("streams the response: the client reads the first chunk before the upstream ends", async () => {
      const req = http.request(`${gw.url}/v1/stream`, {
        headers: { authorization: "Bearer valid-token", "x-hold": "down" },
      });
      req.end();
      if (!held.has("down")) await once(heldEvents, "down");
      const { res: upstreamRes } = held.get("down")!;
      upstreamRes.writeHead(200, { "content-type": "text/plain" });
      upstreamRes.write("first-chunk;");
      const [res] = (await once(req, "response")) as [IncomingMessage];
      const [chunk] = (await once(res, "data")) as [Buffer];
      expect(chunk.toString()).toBe("first-chunk;");
      upstreamRes.end("last");
      const rest: Buffer[] = [];
      res.on("data", (c: Buffer) => rest.push(c));
      await once(res, "end");
      expect(Buffer.concat(rest).toString()).toBe("last");
    });

    it("streams the request body: the upstream reads the first chunk before the client ends", async () => {
      const req = http.request(`${gw.url}/v1/upload`, {
        method: "POST",
        headers: { authorization: "Bearer valid-token", "x-hold": "up", "transfer-encoding": "chunked" },
      });
      req.write("part-1;");
      if (!held.has("up")) await once(heldEvents, "up");
      const { req: upstreamReq, res: upstreamRes } = held.get("up")!;
      const [chunk] = (await once(upstreamReq, "data")) as [Buffer];
      expect(chunk.toString()).toBe("part-1;");
      req.end("part-2");
      const [more] = (await once(upstreamReq, "data")) as [Buffer];
      expect(more.toString()).toBe("part-2");
      upstreamRes.end("done");
      const [res] = (await once(req, "response")) as [IncomingMessage];
      expect(res.statusCode).toBe(200);
      res.resume();
    });

    it("a client abort aborts the upstream request", async () => {
      const req = http.request(`${gw.url}/v1/abort`, {
        headers: { authorization: "Bearer valid-token", "x-hold": "abort" },
      });
      req.on("error", () => {});
      req.end();
      if (!held.has("abort")) await once(heldEvents, "abort");
      const { res: upstreamRes } = held.get("abort")!;
      const closed = once(upstreamRes, "close");
      req.destroy();
      await closed;
      expect(upstreamRes.writableFinished).toBe(false);
    });
  });
});
