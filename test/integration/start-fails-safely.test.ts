/**
 * `gateway start` never serves by accident: without a configuration it exits 2
 * naming `--config` and `GATEWAY_CONFIG` (the demo has its own command); a port another listener
 * holds, the API one or the admin one, is a fatal line naming the listener and the port and a
 * non-zero exit, with a Redis store whose connection would otherwise keep the process alive, and
 * with workers; every line it writes, on stdout and stderr, is JSON.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { childConfig, freePorts } from "../helpers/child-gateway.js";
import { jsonLines, runGateway } from "../helpers/gateway-command.js";
import { RedisServer } from "../helpers/redis-server.js";

let redis: RedisServer;
let dir: string;
let holder: net.Server;
let heldPort: number;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "gateway-start-fails-"));
  [redis, heldPort] = await Promise.all([RedisServer.start(), freePorts(1).then((p) => p[0]!)]);
  holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(heldPort, "127.0.0.1", resolve));
});

afterAll(async () => {
  await new Promise((resolve) => holder.close(resolve));
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A config file with a Redis store; `ports` fixes the listeners' ports. */
async function configFile(name: string, ports: Partial<{ apiPort: number; adminPort: number }>, extra = {}) {
  const [apiPort, adminPort] = await freePorts(2);
  const config = childConfig("http://127.0.0.1:9", { apiPort: apiPort!, adminPort: adminPort!, ...ports });
  const limits = config.rate_limits as Record<string, unknown>;
  config.rate_limits = { ...limits, store: { redis: { url: redis.url, key_prefix: `start-${name}` } } };
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(file, stringify({ ...config, ...extra }));
  return file;
}

function fatalLine(lines: readonly string[]): Record<string, unknown> {
  const parsed = jsonLines(lines);
  const fatal = parsed.filter((l) => l.level === "fatal");
  expect(fatal, JSON.stringify(parsed)).toHaveLength(1);
  return fatal[0]!;
}

describe("gateway start", () => {
  it("without --config or GATEWAY_CONFIG exits 2 naming both, in JSON", async () => {
    const r = await runGateway(["start"], { env: { GATEWAY_CONFIG: undefined } });
    expect(r.status).toBe(2);
    const line = fatalLine(r.lines);
    expect(line.msg).toContain("--config");
    expect(line.msg).toContain("GATEWAY_CONFIG");
    expect(line.msg).toContain("npm run demo");
  });

  it("with its API port held by another listener exits 1 naming the api listener and the port", async () => {
    const r = await runGateway(["start", "--config", await configFile("api", { apiPort: heldPort })]);
    expect(r.status).toBe(1);
    expect(fatalLine(r.lines)).toMatchObject({ listener: "api", port: heldPort, code: "EADDRINUSE" });
  });

  it("with its admin port held exits 1 naming the admin listener, rather than serving without it", async () => {
    const r = await runGateway(["start", "--config", await configFile("admin", { adminPort: heldPort })]);
    expect(r.status).toBe(1);
    expect(fatalLine(r.lines)).toMatchObject({ listener: "admin", port: heldPort, code: "EADDRINUSE" });
    expect(jsonLines(r.lines).some((l) => l.msg === "gateway listening")).toBe(false);
  });

  it("with workers, a held API port stops the whole group with JSON lines only", async () => {
    const file = await configFile("workers", { apiPort: heldPort }, { workers: 2 });
    const r = await runGateway(["start", "--config", file], { timeoutMs: 40_000 });
    expect(r.status).toBe(1);
    const parsed = jsonLines(r.lines);
    const fatal = parsed.filter((l) => l.level === "fatal");
    expect(fatal.length).toBeGreaterThan(0);
    expect(fatal).toContainEqual(expect.objectContaining({ listener: "api", port: heldPort }));
  }, 60_000);

  it("with a file it names unreadable exits 1 with a JSON line naming its key, Redis configured", async () => {
    const listen = { host: "127.0.0.1", tls: { cert_file: "missing.crt", key_file: "missing.key" } };
    const file = await configFile("tls", {}, {});
    const text = readFileSync(file, "utf8");
    const config = parse(text) as Record<string, Record<string, unknown>>;
    writeFileSync(file, stringify({ ...config, listen: { ...config.listen, ...listen } }));
    const r = await runGateway(["start", "--config", file]);
    expect(r.status).toBe(1);
    expect(JSON.stringify(fatalLine(r.lines))).toContain("listen.tls.cert_file");
  });

  it("with an invalid configuration exits 1 with one JSON line listing every problem", async () => {
    const file = path.join(dir, "invalid.yaml");
    writeFileSync(file, "listen: { port: -1 }\nupstreams: {}\n");
    const r = await runGateway(["start", "--config", file]);
    expect(r.status).toBe(1);
    const line = fatalLine(r.lines);
    const paths = (line.problems as { path: string }[]).map((p) => p.path);
    expect(paths).toEqual(expect.arrayContaining(["listen.port", "upstreams", "routes"]));
  });
});
