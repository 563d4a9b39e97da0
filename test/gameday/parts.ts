/**
 * The parts of the game day (`gameday.ts`): upstream instances that can be killed and restarted on
 * their port, gateway replicas (real `gateway start` processes) that can be restarted on theirs,
 * and a client that spreads calls over the replicas as a load balancer would (a refused connection,
 * where no byte was sent, goes to the other replica).
 */
import { spawn, type ChildProcess } from "node:child_process";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";
import { REPO_ROOT } from "../helpers/child-gateway.js";

/** One upstream instance: `GET /v1/items/<id>`, `POST /v1/items`, `GET /v1/stream`, WebSocket echo. */
export class Instance {
  server: http.Server;
  /** POST request ids received, with how often (never more than once is the rule). */
  readonly posts: Map<string, number>;
  /** Request ids in flight here now (a kill cuts them: the scenario asked for those). */
  readonly inFlight = new Set<string>();
  served = 0;
  private readonly sockets = new Set<Socket>();
  private readonly wss = new WebSocketServer({ noServer: true });

  constructor(
    readonly name: string,
    readonly port: number,
    posts: Map<string, number>,
  ) {
    this.posts = posts;
    this.server = this.create();
    this.wss.on("connection", (ws: WebSocket) =>
      ws.on("message", (d) => ws.send(`echo:${this.name}:${d.toString()}`)),
    );
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.server = this.create();
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(this.port, "127.0.0.1", () => resolve());
    });
  }

  /** A crash: the listener closes and every connection (calls in flight, WebSockets) is cut. */
  kill(): string[] {
    const cut = [...this.inFlight];
    this.server.close();
    for (const s of this.sockets) s.destroy();
    for (const ws of this.wss.clients) ws.terminate();
    return cut;
  }

  private create(): http.Server {
    const server = http.createServer((req, res) => this.handle(req, res));
    server.keepAliveTimeout = 60_000;
    server.on("connection", (s: Socket) => {
      this.sockets.add(s);
      s.once("close", () => this.sockets.delete(s));
    });
    server.on("upgrade", (req, socket, head) =>
      this.wss.handleUpgrade(req, socket as Socket, head, (ws) => this.wss.emit("connection", ws, req)),
    );
    return server;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const id = String(req.headers["x-request-id"] ?? "");
    this.served++;
    this.inFlight.add(id);
    res.once("close", () => this.inFlight.delete(id));
    const url = req.url ?? "";
    if (url === "/health") return void res.writeHead(200).end("ok");
    if (req.method === "POST") {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        this.posts.set(id, (this.posts.get(id) ?? 0) + 1);
        res
          .writeHead(201, { "content-type": "text/plain" })
          .end(`created ${Buffer.concat(chunks).toString()}`);
      });
      return;
    }
    if (url.startsWith("/v1/stream")) {
      res.writeHead(200, { "content-type": "text/plain" });
      let n = 0;
      const t = setInterval(() => {
        if (res.destroyed) return clearInterval(t);
        res.write(`c${++n};`);
        if (n === 10) {
          clearInterval(t);
          res.end();
        }
      }, 40);
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(`{"instance":"${this.name}"}`);
  }
}

/** One gateway replica: a `gateway start` process on fixed ports, restartable. */
export class Replica {
  private proc: ChildProcess | null = null;
  /** The load balancer sends it new calls (false while a rolling deploy replaces it). */
  inRotation = true;
  readonly lines: Record<string, unknown>[] = [];
  /** Access lines of calls it answered 5xx, by request id (which endpoint they went to). */
  readonly failed = new Map<string, Record<string, unknown>>();

  constructor(
    readonly name: string,
    readonly apiPort: number,
    readonly adminPort: number,
    readonly configFile: string,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.apiPort}`;
  }

  get adminUrl(): string {
    return `http://127.0.0.1:${this.adminPort}`;
  }

  /** Starts the process and resolves once it listens (bounded: 30 s). */
  async start(): Promise<void> {
    const proc = spawn(
      process.execPath,
      ["--import", "tsx", "gateway/main.ts", "start", "--config", this.configFile],
      { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "inherit"] },
    );
    this.proc = proc;
    let partial = "";
    const listening = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name} did not listen within 30 s`)), 30_000);
      proc.once("exit", (code) => reject(new Error(`${this.name} exited with ${code} before listening`)));
      proc.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
        partial += chunk;
        let nl: number;
        while ((nl = partial.indexOf("\n")) >= 0) {
          const text = partial.slice(0, nl);
          partial = partial.slice(nl + 1);
          try {
            const line = JSON.parse(text) as Record<string, unknown>;
            if (line.msg !== "request") this.lines.push(line);
            else if ((line.status as number) >= 500) this.failed.set(String(line.reqId), line);
            if (line.msg === "gateway listening") {
              clearTimeout(timer);
              resolve();
            }
          } catch {
            // not JSON: ignored
          }
        }
      });
    });
    await listening;
  }

  /** SIGTERM (a rolling deploy's stop): resolves with the exit code once the process has ended. */
  async stop(): Promise<number | null> {
    const proc = this.proc;
    if (proc === null || proc.exitCode !== null) return proc?.exitCode ?? null;
    const exited = new Promise<number | null>((r) => proc.once("exit", (code) => r(code)));
    proc.kill("SIGTERM");
    return exited;
  }

  /** Lines logged since start with this message. */
  count(msg: string): number {
    return this.lines.filter((l) => l.msg === msg).length;
  }

  kill(): void {
    this.proc?.kill("SIGKILL");
  }
}

/** An answer as the load balancer's client saw it. */
export interface Answer {
  status: number;
  body: string;
  /** Connection-level failure after a connection was made (0 status), or "". */
  error: string;
}

/**
 * Sends one call to a replica in rotation, round robin, as a load balancer would: a refused
 * connection (no byte sent) goes to the next replica, for at most 10 s; anything else is the answer.
 */
export async function call(
  replicas: readonly Replica[],
  turn: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Answer> {
  const deadline = Date.now() + 10_000;
  for (let i = turn; ; i++) {
    const r = replicas[i % replicas.length]!;
    if (!r.inRotation) {
      if (Date.now() > deadline) return { status: 0, body: "", error: "no replica in rotation" };
      continue;
    }
    const a = await once(r.url + path, method, headers, body);
    if (a.error !== "ECONNREFUSED" || Date.now() > deadline) return a;
    if (i % replicas.length === replicas.length - 1) await new Promise((res) => setTimeout(res, 50));
  }
}

function once(url: string, method: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), error: "" }),
      );
      res.on("error", (e: NodeJS.ErrnoException) =>
        resolve({ status: 0, body: "", error: e.code ?? e.message }),
      );
    });
    req.on("error", (e: NodeJS.ErrnoException) =>
      resolve({ status: 0, body: "", error: e.code ?? e.message }),
    );
    req.end(body);
  });
}
