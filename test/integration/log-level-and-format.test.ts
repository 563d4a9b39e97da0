/**
 * The log's level and format for a run (issue 27): `LOG_LEVEL` overrides `log.level` (an invalid
 * one is a start-up error naming it), and `log.format: pretty` writes pino-pretty's text, access
 * lines included, instead of JSON. Real `gateway start` children.
 */
import type { Server } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { childConfig, spawnGateway, type ChildGateway } from "../helpers/child-gateway.js";
import { jsonLines, runGateway } from "../helpers/gateway-command.js";
import { closeServer, listen, request } from "../helpers/http.js";

let upstream: { server: Server; url: string };
const children: ChildGateway[] = [];

beforeAll(async () => {
  upstream = await listen((_req, res) => res.writeHead(200).end("ok"));
});

afterAll(async () => {
  await Promise.all(children.map((c) => c.dispose()));
  await closeServer(upstream.server);
});

async function runAndStop(log: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): Promise<ChildGateway> {
  const gw = await spawnGateway((ports) => childConfig(upstream.url, ports, { log }), { env });
  children.push(gw);
  expect((await request(`${gw.url}/v1/x`, { headers: { authorization: "Bearer valid-token" } })).status).toBe(
    200,
  );
  gw.signal("SIGTERM");
  expect((await gw.exited).code).toBe(0);
  return gw;
}

describe("LOG_LEVEL", () => {
  it("overrides log.level, in any case: at WARN, a run writes no info line", async () => {
    const gw = await runAndStop({ level: "info" }, { LOG_LEVEL: "WARN" });
    expect(gw.lines.filter((l) => l.level === "info")).toEqual([]);
    expect(gw.stderr()).toBe("");
  });

  it("is validated like log.level, naming the variable", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "gateway-log-level-"));
    try {
      const file = path.join(dir, "gateway.yaml");
      writeFileSync(file, stringify(childConfig(upstream.url, { apiPort: 0, adminPort: 0 })));
      const r = await runGateway(["start", "--config", file], { env: { LOG_LEVEL: "verbose" } });
      expect(r.status).toBe(1);
      const [line] = jsonLines(r.lines);
      expect(line!.problems).toEqual([
        expect.objectContaining({
          path: "log.level",
          message: expect.stringContaining("(from the LOG_LEVEL environment variable)"),
        }),
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("log.format: pretty", () => {
  it("writes pino-pretty's text for the gateway's lines and the access lines", async () => {
    const gw = await runAndStop({ level: "info", format: "pretty" });
    const text = gw.lines.map((l) => (typeof l.raw === "string" ? l.raw : JSON.stringify(l))).join("\n");
    expect(gw.lines.filter((l) => l.raw === undefined)).toEqual([]); // no JSON line at all
    expect(text).toMatch(/INFO.*gateway listening/);
    // One line per access line: method, path, status, duration, identity, class, remaining.
    expect(text).toMatch(/INFO.*: GET \/v1\/x 200 [\d.]+ms alice read remaining=\d+\n/);
    expect(text).not.toMatch(/^\s+reqId:/m);
  });
});
