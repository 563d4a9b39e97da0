/**
 * The reference of the TLS cells (`tls.ts`): a bare Node TLS proxy on undici's `Pool`, HTTP/1.1
 * (`node:https`) or HTTP/2 (`node:http2`, ALPN h2), with nothing else: what TLS and h2 cost Node
 * itself, against which the gateway's TLS cells are read.
 *
 * Usage: `bare-tls-proxy.ts <port> <upstream url> <h1|h2> <cert file> <key file>`
 */
import { readFileSync } from "node:fs";
import http2 from "node:http2";
import https from "node:https";
import { Pool } from "undici";

const port = Number(process.argv[2]);
const target = new URL(process.argv[3]!);
const h2 = process.argv[4] === "h2";
const tls = { cert: readFileSync(process.argv[5]!), key: readFileSync(process.argv[6]!) };
const pool = new Pool(target.origin, { connections: 256, pipelining: 1, keepAliveTimeout: 4_000 });
const DROP = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "proxy-connection",
  "host",
]);

type Req = { method: string; url: string; headers: Record<string, string | string[] | undefined> };
type Res = {
  writeHead(status: number, headers: Record<string, string | string[]>): unknown;
  end(b?: Buffer): unknown;
};

async function proxy(req: Req, res: Res): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers))
    if (v !== undefined && k[0] !== ":" && !DROP.has(k)) headers[k] = v;
  try {
    const up = await pool.request({ path: req.url, method: req.method as "GET", headers });
    const out: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(up.headers)) if (v !== undefined && !DROP.has(k)) out[k] = v;
    const body = Buffer.from(await up.body.arrayBuffer());
    res.writeHead(up.statusCode, out);
    res.end(body);
  } catch {
    res.writeHead(502, {});
    res.end();
  }
}

const server = h2
  ? http2.createSecureServer(
      { ...tls, allowHTTP1: true },
      (req, res) => void proxy(req, res as unknown as Res),
    )
  : https.createServer(tls, (req, res) => void proxy(req as Req, res as unknown as Res));
server.listen(port, "127.0.0.1");
process.on("SIGTERM", () => {
  server.close();
  process.exit(0);
});
