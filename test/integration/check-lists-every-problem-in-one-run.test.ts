/**
 * SPEC §7: `gateway check` lists every problem of a file in one run: the shape errors of every
 * section and the cross-references (unknown upstream, plan or class; endpoints of mixed schemes or
 * listed twice) together, each once, and exits 1. Before, a route's unknown upstream appeared only
 * once the first shape error was fixed, and a pool's mixed schemes went unreported beside one.
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { configFixture } from "../helpers/config-problems.js";

describe("gateway check", () => {
  it("problems_of_every_kind: every shape error and every cross-reference, each once, exit 1", () => {
    const file = configFixture("problems_of_every_kind.yaml");
    const r = spawnSync(process.execPath, ["--import", "tsx", "gateway/main.ts", "check", "--config", file], {
      encoding: "utf8",
    });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    const lines = r.stderr.split("\n").filter((l) => l.startsWith("  "));
    expect([...lines].sort()).toEqual(
      [
        // shape errors, one or more in every section that has one
        "listen.port: expected a port number (0-65535), received 99999 (line 1, col 17)",
        "listen.grace_ms: expected a duration in ms from 1 to 2147483647, received 3000000000 (line 1, col 34)",
        "upstreams.docs.timeout_ms: expected a duration in ms from 1 to 2147483647, received -5 (line 4, col 53)",
        'routes[1].prefix: expected a path prefix starting with /, received "v2" (line 12, col 15)',
        'auth.realm: expected a non-empty string, received "" (line 15, col 10)',
        'rate_limits.failure_mode: expected one of "open", "closed", received "sometimes" (line 17, col 17)',
        "rate_limits.classes.read.windows[0].limit: expected a positive integer, received 0 (line 21, col 32)",
        "rate_limits.classes.read.windows[0]: expected exactly one of `window_s` (sliding) and `period` (calendar), received neither (line 21, col 23)",
        'log: unknown key "levle" (did you mean "level"?) (line 26, col 8)',
        // cross-references and cross-field checks, beside them
        "workers: more than one worker needs `rate_limits.store.redis`: the memory store counts in each process, so every worker would admit the whole limit (auto counts as more than one), received 2 (line 2, col 10)",
        "upstreams.pool.endpoints: every endpoint needs the same scheme and base path (found http://…/, https://…/) (line 7, col 7)",
        "upstreams.pool.endpoints: endpoint 10.0.0.1:80 is listed twice (line 7, col 7)",
        'routes[0].upstream: unknown upstream "dcos" (known: docs, pool), received "dcos" (line 11, col 30)',
        'rate_limits.default_class: unknown class "raed" (known: read), received "raed" (line 18, col 18)',
        'rate_limits.default_plan: unknown plan "gold" (known: pro), received "gold" (line 19, col 17)',
        'rate_limits.plans.pro.wirte: unknown class "wirte" (known: read) (line 23, col 12)',
        'load_shedding.priorities.platinum: unknown plan "platinum" (known: pro) (line 25, col 17)',
      ]
        .map((l) => `  ${l}`)
        .sort(),
    );
    expect(new Set(lines).size).toBe(lines.length);
  }, 60_000);
});
