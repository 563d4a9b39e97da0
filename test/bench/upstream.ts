/**
 * Benchmark upstream (child process) where nginx is missing: Node `http`, keep-alive, `GET /v1/user`
 * answering a fixed JSON document of about 300 bytes; anything else 404. Usage: `upstream.ts <port>`.
 */
import http from "node:http";
import { NOT_FOUND_JSON, USER_JSON } from "./user-doc.js";

const port = Number(process.argv[2]);
const USER = Buffer.from(USER_JSON);
const NOT_FOUND = Buffer.from(NOT_FOUND_JSON);

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  // Drain any request body so the connection can be reused.
  req.resume();
  const ok = req.url === "/v1/user" || req.url?.startsWith("/v1/user?") === true;
  const body = ok ? USER : NOT_FOUND;
  res.writeHead(ok ? 200 : 404, { "content-type": "application/json", "content-length": body.length });
  res.end(body);
});
server.keepAliveTimeout = 65_000;
server.listen(port, "127.0.0.1");
process.on("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
