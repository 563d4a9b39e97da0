/**
 * Cells (h) and (b): a bare proxy server with a keep-alive agent, nothing else — the baselines the
 * gateway is compared with. `http-proxy` is the design card's package (1.18); `http-proxy-3` its
 * maintained successor, which the gateway uses for WebSocket upgrades.
 * Usage: `bare-proxy.ts <port> <upstream url> [http-proxy|http-proxy-3]` (default http-proxy-3).
 */
import http from "node:http";
import type { Socket } from "node:net";

const port = Number(process.argv[2]);
const target = process.argv[3]!;
const flavour = process.argv[4] ?? "http-proxy-3";
const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64, scheduling: "lifo" });

/** A failed proxied request: 502 if nothing was sent yet, else the connection closed. */
function onError(_err: Error, _req: http.IncomingMessage, res: http.ServerResponse | Socket): void {
  if (!(res instanceof http.ServerResponse)) res.destroy();
  else if (!res.headersSent) res.writeHead(502).end();
  else res.destroy();
}

let web: (req: http.IncomingMessage, res: http.ServerResponse) => void;
if (flavour === "http-proxy") {
  const proxy = (await import("http-proxy")).default.createProxyServer({ target, agent, xfwd: true });
  proxy.on("error", onError);
  web = (req, res) => proxy.web(req, res);
} else {
  const proxy = new (await import("http-proxy-3")).ProxyServer({ target, agent, xfwd: true });
  proxy.on("error", onError);
  web = (req, res) => proxy.web(req, res);
}
const server = http.createServer(web);
server.listen(port, "127.0.0.1");
process.on("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
  agent.destroy();
});
