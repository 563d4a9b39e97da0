/**
 * Several real `node:http` endpoints of one upstream, each on its own port, counting the calls
 * and the health-check probes it receives and naming itself in `x-endpoint` on every answer. A
 * test can make one slow, make its health path fail, or stop it and start it again on its port.
 */
import http, { type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { once } from "node:events";
import { testConfig } from "./gateway.js";
import { closeServer } from "./http.js";
import { freePort } from "./redis-server.js";

/** The health path every test endpoint answers. */
export const HEALTH_PATH = "/healthz";

/** One test endpoint. */
export class TestEndpoint {
  /** Calls other than probes received since start. */
  calls = 0;
  /** Health-check probes received. */
  probes = 0;
  /** The health path answers 503 while false. */
  healthy = true;
  /** Time each call is held before its answer (ms). */
  delayMs = 0;
  /** Status of ordinary calls. */
  status = 200;
  private server: Server | null = null;

  constructor(
    readonly index: number,
    readonly port: number,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** `host:port`, as the gateway names it. */
  get name(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Starts listening on its port (again, after {@link stop}). */
  async start(): Promise<void> {
    const server = http.createServer((req, res) => this.handle(req, res));
    server.keepAliveTimeout = 60_000;
    server.listen(this.port, "127.0.0.1");
    await once(server, "listening");
    this.server = server;
  }

  /** Stops listening and closes every connection (calls to it are then refused). */
  async stop(): Promise<void> {
    if (this.server !== null) await closeServer(this.server);
    this.server = null;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    if (req.url?.endsWith(HEALTH_PATH)) {
      this.probes++;
      res.writeHead(this.healthy ? 200 : 503, { "content-type": "text/plain" });
      res.end(this.healthy ? "ok" : "failing");
      return;
    }
    this.calls++;
    const answer = (): void => {
      res.writeHead(this.status, { "content-type": "text/plain", "x-endpoint": String(this.index) });
      res.end(String(this.index));
    };
    if (this.delayMs > 0) setTimeout(answer, this.delayMs);
    else answer();
  }
}

/** Starts `n` endpoints on free ports from the test range (stable across stop and start). */
export async function startEndpoints(n: number): Promise<TestEndpoint[]> {
  const out: TestEndpoint[] = [];
  for (let i = 0; i < n; i++) {
    const e = new TestEndpoint(i, await freePort());
    await e.start();
    out.push(e);
  }
  return out;
}

/** Stops every endpoint. */
export async function stopEndpoints(endpoints: readonly TestEndpoint[]): Promise<void> {
  await Promise.all(endpoints.map((e) => e.stop()));
}

/**
 * A gateway config whose `docs` upstream has the settings given (SPEC §16 keys), with `url` the
 * first endpoint's unless the settings name `endpoints`, and a read limit out of the way.
 */
export function poolConfig(first: TestEndpoint, upstream: Record<string, unknown>): Record<string, unknown> {
  const base = testConfig(first.url);
  const rl = base.rate_limits as { classes: Record<string, unknown> };
  rl.classes.read = { match: { methods: ["GET", "HEAD"] }, windows: [{ limit: 100000, window_s: 3600 }] };
  return { ...base, upstreams: { docs: { timeout_ms: 5000, ...upstream } } };
}
