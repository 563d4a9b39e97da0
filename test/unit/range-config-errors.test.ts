/**
 * SPEC §7's ranges and messages: every duration in ms and every count is validated against its
 * range (a value a timer would not honour is refused, never fired at once), a URL carrying
 * credentials is refused without printing them, and every zod message names what was expected.
 * Fixtures are named after the failure they cause.
 */
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../gateway/config/load.js";
import { MAX_TIMER_MS } from "../../gateway/config/primitives.js";
import { problemsOf } from "../helpers/config-problems.js";

describe("ranges of durations and counts (SPEC §7)", () => {
  it("MAX_TIMER_MS is the largest delay a Node.js timer honours", async () => {
    expect(MAX_TIMER_MS).toBe(2 ** 31 - 1);
    // One more and Node fires the timer after 1 ms (with a TimeoutOverflowWarning): the bug refused.
    const started = performance.now();
    const warning = new Promise<string>((resolve) => process.once("warning", (w) => resolve(w.name)));
    await new Promise((resolve) => setTimeout(resolve, MAX_TIMER_MS + 1));
    expect(performance.now() - started).toBeLessThan(1000);
    expect(await warning).toBe("TimeoutOverflowWarning");
  });

  it("duration_beyond_timer_range: too large, negative, fractional and non-numeric durations, and a count", () => {
    expect(problemsOf("duration_beyond_timer_range.yaml")).toEqual([
      "listen.grace_ms: expected a duration in ms from 1 to 2147483647, received 2147483648 @1:21",
      "listen.request_timeout_ms: expected a duration in ms from 0 (off) to 2147483647, received -1 @1:53",
      "upstreams.docs.health_check.interval_ms: expected a duration in ms from 1 to 2147483647, received 2147483648 @6:50",
      "upstreams.docs.health_check.timeout_ms: expected a duration in ms from 1 to 2147483647, received 1.5 @6:74",
      "upstreams.docs.timeout_ms: expected a duration in ms from 1 to 2147483647, received 10000000000 @5:17",
      'routes[0].timeout_ms: expected a duration in ms from 1 to 2147483647, received "5s" @8:48',
      "routes[0].retries.backoff.max_ms: expected a duration in ms from 1 to 2147483647, received 0 @8:82",
      "rate_limits.store.redis.command_timeout_ms: expected a duration in ms from 1 to 2147483647, received 2147483648 @12:72",
      "rate_limits.classes.read.windows[0].limit: expected a positive integer of at most 2147483647, received 2147483648 @14:32",
    ]);
  });

  it("memory_max_keys_too_large: an LRU capacity that `start` could not allocate is refused by `check`", () => {
    expect(problemsOf("memory_max_keys_too_large.yaml")).toEqual([
      "auth.static.cache.max_entries: expected an integer from 1 to 10000000 (entries kept in memory), received 100000000 @6:72",
      "rate_limits.memory.max_keys: expected an integer from 1 to 10000000 (entries kept in memory), received 9007199254740991 @8:23",
    ]);
  });

  it("the bounds themselves are accepted: 2147483647 ms, 0 where 0 is off, 10000000 entries", () => {
    const config = parseConfig(
      [
        "listen: { grace_ms: 2147483647, request_timeout_ms: 0 }",
        "upstreams: { docs: { url: 'http://127.0.0.1:3000', timeout_ms: 2147483647 } }",
        "routes: [{ prefix: /v1, upstream: docs }]",
        "auth: { static: { tokens_file: t.yaml } }",
        "rate_limits: { memory: { max_keys: 10000000 }, classes: { read: { windows: [{ limit: 2147483647, window_s: 1 }] } } }",
      ].join("\n"),
      "inline",
      {},
    );
    expect(config.listen.grace_ms).toBe(2_147_483_647);
    expect(config.listen.request_timeout_ms).toBe(0);
    expect(config.rate_limits.memory.max_keys).toBe(10_000_000);
  });
});

describe("URLs with credentials", () => {
  it("upstream_url_with_credentials: refused by key path, the credentials masked in the message", () => {
    const problems = problemsOf("upstream_url_with_credentials.yaml");
    expect(problems).toEqual([
      'upstreams.docs.url: expected a URL without credentials (user:password@): they are never sent, only printed, received "http://***:***@127.0.0.1:3000/api" @2:16',
      'upstreams.pool.endpoints[1].url: expected a URL without credentials (user:password@): they are never sent, only printed, received "https://***@10.0.0.2:8443/" @6:16',
    ]);
    expect(problems.join("\n")).not.toMatch(/s3cret|admin|deploy/);
  });
});

describe("every message says what was expected", () => {
  it("sections_null_or_wrong_type: no zod wording, no `received` twice", () => {
    const problems = problemsOf("sections_null_or_wrong_type.yaml");
    expect(problems).toEqual([
      "listen: expected a mapping, received null @1:9",
      'reload.watch: expected true or false, received "yes" @2:18',
      'routes[0].scopes[0]: expected a non-empty string, received "" @6:45',
      'routes[0].retries.on[0]: expected connect_failure, reset, timeout or an HTTP status from 500 to 599, received "teapot" @6:66',
      'auth.realm: expected a non-empty string, received "" @9:10',
      "rate_limits.store.redis: expected a mapping, received null @12:19",
      'rate_limits.status_path: expected a path starting with / (or null), received "v1/limits" @11:16',
      "rate_limits.classes.read.match.methods: expected a list of at least 1 item, received [] @14:31",
      "cors.allowed_origins: expected a list of at least 1 item, received [] @15:26",
      "load_shedding.priorities: expected a mapping, received null @16:30",
      'log.level: expected one of "fatal", "error", "warn", "info", "debug", "trace", "silent", received "loud" @17:15',
    ]);
    for (const p of problems) {
      expect(p).not.toMatch(/Invalid (input|option|string)|Too (small|big)/);
      expect(p.match(/received/g)).toHaveLength(1);
    }
  });
});
