/** Small HTTP helpers for tests: servers on port 0 and a request that returns status, headers, body. */
import http, { type IncomingHttpHeaders, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A loopback port that refuses every connection: port 1 (tcpmux) is privileged and unused here.
 * Use it for "nothing listens" cases rather than a port found free, which stays free only until
 * something binds it (CI once saw a parallel test's server take such a port).
 */
export const REFUSED_PORT = 1;

/** Starts `server` (or a new one with `listener`) on 127.0.0.1:0 and returns its base URL. */
export async function listen(
  serverOrListener: Server | RequestListener,
): Promise<{ server: Server; url: string; port: number }> {
  const server =
    typeof serverOrListener === "function" ? http.createServer(serverOrListener) : serverOrListener;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return { server, url: `http://127.0.0.1:${port}`, port };
}

/** Closes a server and every connection it holds. */
export function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A response, body read to the end. */
export interface TestResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Keep-alive agent shared by a test file's requests (closed by the caller). */
export function agent(): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets: 600 });
}

/**
 * Sends one request.
 * @param url - absolute URL
 * @param options - method, headers, body, agent
 */
export function request(
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    agent?: http.Agent;
  } = {},
): Promise<TestResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: options.method ?? "GET", headers: options.headers, agent: options.agent ?? false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

/** Sends raw bytes on a new TCP connection and returns everything the server wrote until it closed (or `timeoutMs`). */
export async function rawRequest(port: number, payload: string | Buffer, timeoutMs = 2000): Promise<string> {
  const net = await import("node:net");
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString("latin1"));
    });
    socket.on("error", (err) => {
      clearTimeout(timer);
      if (chunks.length > 0) resolve(Buffer.concat(chunks).toString("latin1"));
      else reject(err);
    });
    socket.write(payload);
  });
}
