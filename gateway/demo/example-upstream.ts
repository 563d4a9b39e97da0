/**
 * An example upstream playing the documentation-publishing API, for the demo and tests:
 * `GET /v1/user`, `GET /v1/spaces`, `GET /v1/search?q=`, `POST /v1/spaces/<id>/pages`.
 */
import http, { type Server } from "node:http";

const USER = JSON.stringify({ id: 42, login: "ada", name: "Ada Lovelace", spaces: ["handbook", "api-docs"] });

/** Creates (does not bind) the example upstream. */
export function createDocsUpstream(): Server {
  return http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://upstream");
    const send = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(text),
      });
      res.end(text);
    };
    if (req.method === "GET" && url.pathname === "/v1/user") {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(USER) });
      return res.end(USER);
    }
    if (req.method === "GET" && url.pathname === "/v1/spaces")
      return send(200, [{ key: "handbook" }, { key: "api-docs" }]);
    if (req.method === "GET" && url.pathname === "/v1/search") {
      return send(200, { query: url.searchParams.get("q") ?? "", results: [] });
    }
    const page = /^\/v1\/spaces\/([^/]+)\/pages$/.exec(url.pathname);
    if (req.method === "POST" && page) {
      let size = 0;
      req.on("data", (chunk: Buffer) => (size += chunk.length));
      req.on("end", () =>
        send(201, {
          space: page[1],
          created: true,
          bytes: size,
          author: req.headers["x-auth-subject"] ?? null,
        }),
      );
      return;
    }
    send(404, { message: "no such resource" });
  });
}
