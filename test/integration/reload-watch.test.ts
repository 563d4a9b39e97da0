/**
 * SPEC §20 `reload: { watch: true }` with real `gateway start` children: the configuration follows
 * its file without a signal — a Kubernetes ConfigMap volume's `..data` symlink swap (a file it
 * names included), an editor's save by rename, a burst of writes (one reload, after the last), a
 * rejected file (the running configuration stays, the key path is logged) — and with workers every
 * one of them applies it. Each reload line and `gateway_config_info{hash}` carry the applied
 * configuration's hash.
 */
import type { Server } from "node:http";
import { existsSync, mkdirSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { childConfig, spawnGateway, type ChildGateway, type LogLine } from "../helpers/child-gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";
import { RedisServer } from "../helpers/redis-server.js";

let upstream: { server: Server; url: string };
const children: ChildGateway[] = [];

beforeAll(async () => {
  upstream = await listen((req, res) => res.writeHead(200).end(`upstream ${req.url}`));
});

afterAll(async () => {
  await Promise.all(children.map((c) => c.dispose()));
  await closeServer(upstream.server);
});

/** Writes `files` into a new `..<version>` directory and swaps `..data` to it, as the kubelet does. */
function configMap(dir: string, version: string, files: Record<string, string>): void {
  const data = path.join(dir, `..${version}`);
  mkdirSync(data);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(data, name), text);
  symlinkSync(`..${version}`, path.join(dir, "..data_tmp"));
  renameSync(path.join(dir, "..data_tmp"), path.join(dir, "..data"));
  for (const name of Object.keys(files)) {
    if (!existsSync(path.join(dir, name))) symlinkSync(`..data/${name}`, path.join(dir, name));
  }
}

const reloaded = (l: LogLine) => l.msg === "configuration reloaded";
const rejected = (l: LogLine) => l.msg === "configuration reload rejected; keeping the running configuration";

/** Resolves when the child has written `n` lines `match` accepts. */
async function nth(gw: ChildGateway, match: (l: LogLine) => boolean, n: number): Promise<LogLine> {
  await gw.waitForLine(() => gw.lines.filter(match).length >= n, 8_000);
  return gw.lines.filter(match)[n - 1]!;
}

const get = (gw: ChildGateway, p: string, token = "valid-token") =>
  request(`${gw.url}${p}`, { headers: { authorization: `Bearer ${token}` } });

async function configInfo(gw: ChildGateway): Promise<string[]> {
  return (await scrape(gw.adminUrl)).select("gateway_config_info").map((s) => s.labels.hash!);
}

const TOKENS = (extra = "") => `valid-token: { active: true, sub: alice, scope: "read write" }\n${extra}`;

describe("reload.watch", () => {
  let cm: ChildGateway;
  let cmDir = "";
  const cmConfig = (routes: string[]) => (ports: { apiPort: number; adminPort: number }) =>
    childConfig(upstream.url, ports, {
      reload: { watch: true },
      routes: routes.map((prefix) => ({ prefix, upstream: "docs" })),
      auth: { realm: "api", static: { tokens_file: "tokens.yaml" } },
    });
  let ports: { apiPort: number; adminPort: number };

  beforeAll(async () => {
    cm = await spawnGateway(
      (p) => {
        ports = p;
        return cmConfig(["/v1"])(p);
      },
      {
        place: (dir, yaml) => {
          cmDir = path.join(dir, "configmap");
          mkdirSync(cmDir);
          configMap(cmDir, "2026_01_01_00_00_00.1", { "gateway.yaml": yaml, "tokens.yaml": TOKENS() });
          return path.join(cmDir, "gateway.yaml");
        },
      },
    );
    children.push(cm);
  });

  it("follows a ConfigMap volume's ..data swap, and reports the new configuration's hash", async () => {
    const started = (await cm.waitForLine((l) => l.msg === "gateway listening")).configHash as string;
    expect(started).toMatch(/^[0-9a-f]{12}$/);
    expect(await configInfo(cm)).toEqual([started]);
    expect((await get(cm, "/v2/x")).status).toBe(404);
    configMap(cmDir, "2026_01_01_00_01_00.2", {
      "gateway.yaml": stringify(cmConfig(["/v1", "/v2"])(ports)),
      "tokens.yaml": TOKENS(),
    });
    const line = await nth(cm, reloaded, 1);
    expect(line).toMatchObject({ trigger: "watch" });
    expect(line.configHash).not.toBe(started);
    expect((await get(cm, "/v2/x")).status).toBe(200);
    expect(await configInfo(cm)).toEqual([line.configHash]);
  });

  it("follows a file the configuration names (the tokens file) when only it changes", async () => {
    expect((await get(cm, "/v1/x", "new-token")).status).toBe(401);
    configMap(cmDir, "2026_01_01_00_02_00.3", {
      "gateway.yaml": stringify(cmConfig(["/v1", "/v2"])(ports)),
      "tokens.yaml": TOKENS('new-token: { active: true, sub: bob, scope: "read" }\n'),
    });
    await nth(cm, reloaded, 2);
    expect((await get(cm, "/v1/x", "new-token")).status).toBe(200);
  });

  it("keeps the running configuration when the new file is invalid, naming the key path", async () => {
    configMap(cmDir, "2026_01_01_00_03_00.4", {
      "gateway.yaml": stringify({ ...cmConfig(["/v1"])(ports), trust_proxy: -1 }),
      "tokens.yaml": TOKENS(),
    });
    const line = await nth(cm, rejected, 1);
    expect(JSON.stringify(line.err)).toContain("trust_proxy");
    expect(line).toMatchObject({ trigger: "watch" });
    expect((await get(cm, "/v2/x")).status).toBe(200);
    expect((await scrape(cm.adminUrl)).value("gateway_config_reloads_total", { result: "error" })).toBe(1);
  });
});

describe("reload.watch in a plain directory", () => {
  let gw: ChildGateway;
  const config = (ports: { apiPort: number; adminPort: number }, prefix: string) =>
    childConfig(upstream.url, ports, { reload: { watch: true }, routes: [{ prefix, upstream: "docs" }] });
  let ports: { apiPort: number; adminPort: number };

  beforeAll(async () => {
    gw = await spawnGateway((p) => ((ports = p), config(p, "/v1")));
    children.push(gw);
  });

  it("follows an editor's save by rename", async () => {
    const tmp = `${gw.configFile}.swp`;
    writeFileSync(tmp, stringify(config(ports, "/renamed")));
    renameSync(tmp, gw.configFile);
    await nth(gw, reloaded, 1);
    expect((await get(gw, "/renamed/x")).status).toBe(200);
  });

  it("makes one reload of a burst of writes less than 500 ms apart, with the last one applied", async () => {
    for (const prefix of ["/burst-1", "/burst-2", "/burst-3"]) {
      gw.writeConfig(config(ports, prefix));
      await new Promise((r) => setTimeout(r, 100));
    }
    await nth(gw, reloaded, 2);
    expect((await get(gw, "/burst-3/x")).status).toBe(200);
    // Long enough for a second reload of the same burst to show (quiet period 500 ms, poll 2 s).
    await new Promise((r) => setTimeout(r, 2500));
    expect(gw.lines.filter(reloaded)).toHaveLength(2);
  });
});

describe("reload.watch with workers", () => {
  let redis: RedisServer;
  let group: ChildGateway;
  const config = (ports: { apiPort: number; adminPort: number }, prefix: string) =>
    childConfig(upstream.url, ports, {
      workers: 2,
      reload: { watch: true },
      routes: [{ prefix, upstream: "docs" }],
      rate_limits: {
        store: { redis: { url: redis.url, key_prefix: "watch" } },
        classes: { read: { windows: [{ limit: 1000, window_s: 60 }] } },
      },
    });
  let ports: { apiPort: number; adminPort: number };

  beforeAll(async () => {
    redis = await RedisServer.start();
    group = await spawnGateway((p) => ((ports = p), config(p, "/v1")), { readyTimeoutMs: 40_000 });
    children.push(group);
  }, 60_000);

  afterAll(() => redis?.stop());

  it("is applied by every worker, counted once, each process reporting the same hash", async () => {
    await group.waitForLine((l) => l.msg === "gateway listening" && l.workers === 2, 20_000);
    group.writeConfig(config(ports, "/moved"));
    const line = await nth(group, (l) => reloaded(l) && l.workers === 2, 1);
    expect(line).toMatchObject({ trigger: "watch" });
    for (let i = 0; i < 4; i++) expect((await get(group, "/moved/x")).status).toBe(200);
    const m = await scrape(group.adminUrl);
    expect(m.value("gateway_config_reloads_total", { result: "success" })).toBe(1);
    const hashes = m.select("gateway_config_info").map((s) => s.labels.hash);
    expect(hashes).toHaveLength(3); // the primary and two workers
    expect(new Set(hashes)).toEqual(new Set([line.configHash]));
  }, 60_000);
});
