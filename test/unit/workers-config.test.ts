/**
 * `workers` (SPEC §15): a positive integer or `auto`, default 1; more than one (or `auto`) without
 * `rate_limits.store.redis` is a configuration error naming both keys, and `gateway start` exits
 * non-zero on it before anything listens.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, parseConfig } from "../../gateway/config/load.js";
import { workerCount } from "../../gateway/config/workers-schema.js";
import { REPO_ROOT } from "../helpers/child-gateway.js";
import { FIXTURES } from "../helpers/gateway.js";

const fixture = path.join(FIXTURES, "config", "workers_without_redis.yaml");
const MESSAGE =
  "  workers: more than one worker needs `rate_limits.store.redis`: the memory store counts in each " +
  "process, so every worker would admit the whole limit (auto counts as more than one), received 2 " +
  "(line 1, col 10)\n";

const base = (workers: string, redis = true) =>
  `workers: ${workers}\nupstreams: { d: { url: "http://127.0.0.1:1" } }\nroutes: [{ prefix: /, upstream: d }]\n` +
  `auth: { static: { tokens_file: t.yaml } }\nrate_limits: {${redis ? ' store: { redis: { url: "redis://127.0.0.1:1" } },' : ""}` +
  ` classes: { r: { windows: [{ limit: 1, window_s: 1 }] } } }\n`;

function problems(text: string): string[] {
  try {
    parseConfig(text);
  } catch (err) {
    return (err as ConfigError).problems.map((p) => `${p.path}: ${p.message}`);
  }
  return [];
}

describe("workers", () => {
  it("defaults to 1 and accepts a positive integer or auto", () => {
    const noKey = base("1").replace("workers: 1\n", "");
    expect(parseConfig(noKey).workers).toBe(1);
    expect(parseConfig(base("4")).workers).toBe(4);
    expect(parseConfig(base("auto")).workers).toBe("auto");
    expect(workerCount("auto", 6)).toBe(6);
    expect(workerCount(3, 6)).toBe(3);
    expect(problems(base("many"))).toEqual(['workers: expected a positive integer or auto, received "many"']);
    expect(problems(base("1.5"))).toEqual(["workers: expected a positive integer or auto, received 1.5"]);
  });

  it("more than one worker, or auto, without Redis names workers and rate_limits.store.redis", () => {
    expect(() => loadConfig(fixture)).toThrow(ConfigError);
    expect(problems(base("auto", false))).toEqual([
      expect.stringMatching(/^workers: more than one worker needs `rate_limits\.store\.redis`/),
    ]);
    expect(problems(base("1", false))).toEqual([]);
  });

  it("`gateway start` exits 1 before listening", () => {
    const r = spawnSync(
      process.execPath,
      ["--import", "tsx", "gateway/main.ts", "start", "--config", fixture],
      { cwd: REPO_ROOT, encoding: "utf8", timeout: 20_000 },
    );
    expect(r.status).toBe(1);
    // One JSON line (every line is JSON), no "gateway listening" line.
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toMatchObject({
      level: "fatal",
      msg: `invalid configuration ${fixture}:\n${MESSAGE.trimEnd()}`,
    });
  });
});
