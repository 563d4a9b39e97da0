/**
 * The image run as a user runs it (README "Deploying"): a config with the memory store and a static
 * token mounted over /etc/gateway/gateway.yaml, the image's own ports 8080 and 9090, then checked from
 * outside the container: the SPEC §2/§3 answers, the admin listener, the user the process runs as,
 * the image's HEALTHCHECK, and a SIGTERM drain through `podman stop`.
 */
import assert from "node:assert/strict";
import { request, type TestResponse } from "../helpers/http.js";
import { waitFor } from "../helpers/redis-server.js";
import { BEARER, type Checks, configMounts, SLOW_MS, type Upstream, writeConfig } from "./fixtures.js";
import { inspect, podman, podmanOk } from "./podman.js";

export interface Run {
  image: string;
  /** Network namespace the containers join (`--network ns:<path>`); the test runs inside it too. */
  netns: string;
  /** Label value every container of this run carries, for cleanup. */
  label: string;
  workDir: string;
  upstream: Upstream;
}

/** The `podman run` options every container of the test shares. */
export function runOptions(run: Run, name: string): string[] {
  return ["--name", name, "--label", `gateway-container-test=${run.label}`, "--network", `ns:${run.netns}`];
}

/** Waits (bounded) until the admin listener answers /readyz with 200; on time-out shows the logs. */
export async function waitReady(name: string, adminPort: number): Promise<void> {
  try {
    await waitFor(
      `${name} /readyz`,
      async () => (await request(`http://127.0.0.1:${adminPort}/readyz`)).status === 200,
      30_000,
    );
  } catch (err) {
    const logs = await podman(["logs", "--tail", "20", name], 10_000, false);
    throw new Error(`${(err as Error).message}\n${logs.stdout}\n${logs.stderr}`);
  }
}

/** The three X-RateLimit-* headers as integers (asserting they are there). */
export function rateLimitHeaders(res: TestResponse): { limit: number; remaining: number; reset: number } {
  const read = (name: string): number => {
    const value = res.headers[name];
    assert.match(String(value), /^\d+$/, `${name}: ${String(value)}`);
    return Number(value);
  };
  return {
    limit: read("x-ratelimit-limit"),
    remaining: read("x-ratelimit-remaining"),
    reset: read("x-ratelimit-reset"),
  };
}

/** SPEC §2: the exact body of a 429, N a whole number of seconds equal to Retry-After. */
export function assertSpec429(res: TestResponse): void {
  assert.equal(res.status, 429);
  const m =
    /^\{"error":\{"code":429,"message":"API rate limit exceeded\. Please try again in (\d+) seconds"\}\}$/.exec(
      res.body,
    );
  assert.ok(m, `429 body: ${res.body}`);
  assert.equal(res.headers["retry-after"], m[1]);
  assert.ok(Number(m[1]) >= 1);
  assert.equal(rateLimitHeaders(res).remaining, 0);
}

/** Every check of the memory-store run; leaves no container behind. */
export async function memoryStoreChecks(run: Run, checks: Checks): Promise<void> {
  const name = `${run.label}-memory`;
  const readLimit = 3;
  const paths = writeConfig(`${run.workDir}/memory`, {
    upstreamPort: run.upstream.port,
    apiPort: 8080,
    adminPort: 9090,
    readLimit,
  });
  const api = "http://127.0.0.1:8080";
  const admin = "http://127.0.0.1:9090";

  const started = await checks.check(
    "memory store: the container starts and /readyz answers 200",
    async () => {
      await podmanOk(["run", "-d", ...runOptions(run, name), ...configMounts(paths), run.image]);
      await waitReady(name, 9090);
    },
  );
  if (!started) return;

  await checks.check("200 from the upstream with X-RateLimit-Limit, -Remaining and -Reset", async () => {
    const res = await request(`${api}/v1/hello`, { headers: BEARER });
    assert.equal(res.status, 200, res.body);
    assert.deepEqual(JSON.parse(res.body), { path: "/v1/hello", subject: "container-user" });
    const h = rateLimitHeaders(res);
    assert.equal(h.limit, readLimit);
    assert.equal(h.remaining, readLimit - 1);
    assert.ok(h.reset > Date.now() / 1000, `reset ${h.reset} is not in the future`);
  });

  await checks.check("401 without a token, with WWW-Authenticate and the rate-limit headers", async () => {
    const res = await request(`${api}/v1/hello`);
    assert.equal(res.status, 401, res.body);
    assert.equal(res.headers["www-authenticate"], 'Bearer realm="api"');
    assert.deepEqual(JSON.parse(res.body), { error: { code: 401, message: "Authentication required" } });
    rateLimitHeaders(res);
  });

  await checks.check("429 over the limit, with the exact SPEC body and Retry-After", async () => {
    let res = await request(`${api}/v1/hello`, { headers: BEARER });
    for (let i = 0; i < readLimit && res.status === 200; i += 1) {
      res = await request(`${api}/v1/hello`, { headers: BEARER });
    }
    assertSpec429(res);
  });

  await checks.check("admin port: /healthz answers 200 and /metrics serves gateway_ metrics", async () => {
    const health = await request(`${admin}/healthz`);
    assert.equal(health.status, 200);
    const metrics = await request(`${admin}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(metrics.body, /^gateway_requests_total\{.*code="429".*\} \d+$/m);
    assert.match(metrics.body, /^gateway_requests_total\{.*code="401".*\} \d+$/m);
  });

  await checks.check("the gateway is PID 1 and runs as uid/gid 1000 (node)", async () => {
    assert.equal(await inspect("image", run.image, "{{.Config.User}}"), "node");
    const status = await podmanOk(["exec", name, "cat", "/proc/1/status"]);
    assert.match(status, /^Uid:\s+1000\s+1000\s+1000\s+1000$/m);
    assert.match(status, /^Gid:\s+1000\s+1000\s+1000\s+1000$/m);
    const cmdline = await podmanOk(["exec", name, "cat", "/proc/1/cmdline"]);
    assert.equal(
      cmdline.split("\0").join(" ").trim(),
      "node dist/gateway/main.js start --config /etc/gateway/gateway.yaml",
    );
  });

  await checks.check(
    "the image's HEALTHCHECK passes (podman healthcheck run, and its command by exec)",
    async () => {
      const test = JSON.parse(
        await inspect("image", run.image, "{{json .Config.Healthcheck.Test}}"),
      ) as string[];
      assert.equal(test[0], "CMD", "the image keeps its HEALTHCHECK (podman build --format docker)");
      // Without systemd podman arms no timer for the periodic check, so the test runs it itself.
      const r = await podman(["healthcheck", "run", name]);
      assert.equal(r.code, 0, `healthcheck run: ${r.stdout} ${r.stderr}`);
      await podmanOk(["exec", name, ...test.slice(1)]);
    },
  );

  await checks.check(
    `podman stop: an in-flight ${SLOW_MS} ms request completes, then exit code 0`,
    async () => {
      const inFlight = request(`${api}/v1/slow`, { headers: BEARER });
      await run.upstream.slowArrived();
      const t0 = Date.now();
      const stop = await podman(["stop", name], 30_000);
      const stopMs = Date.now() - t0;
      const res = await inFlight;
      assert.equal(stop.code, 0, stop.stderr);
      assert.equal(res.status, 200, `in-flight request: ${res.status} ${res.body}`);
      assert.deepEqual(JSON.parse(res.body), { path: "/v1/slow", subject: "container-user" });
      assert.equal(await inspect("container", name, "{{.State.ExitCode}}"), "0");
      // Podman's stop timeout is 10 s; an exit before it means SIGTERM did it, not SIGKILL.
      assert.ok(stopMs < 9_500, `stop took ${stopMs} ms`);
      const logs = await podman(["logs", name], 10_000, false);
      assert.doesNotMatch(logs.stdout, /"level":(50|60)/, "an error or fatal line in the gateway's log");
    },
  );
  await podman(["rm", "-f", name], 30_000, false);
}
