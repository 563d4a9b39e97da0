/**
 * Cell (b): a bare http-proxy-3 server with a keep-alive agent, nothing else — the baseline the
 * gateway is compared with. Usage: `bare-proxy.ts <port> <upstream url>`.
 */
import http from "node:http";
import type { Socket } from "node:net";
import { ProxyServer } from "http-proxy-3";

const port = Number(process.argv[2]);
const target = process.argv[3]!;
const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64, scheduling: "lifo" });
const proxy = new ProxyServer({ target, agent, xfwd: true });
proxy.on("error", (_err: Error, _req: http.IncomingMessage, res: http.ServerResponse | Socket) => {
  if (!(res instanceof http.ServerResponse)) res.destroy();
  else if (!res.headersSent) res.writeHead(502).end();
  else res.destroy();
});
const server = http.createServer((req, res) => proxy.web(req, res));
server.listen(port, "127.0.0.1");
process.on("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
  agent.destroy();
});
