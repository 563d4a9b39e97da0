/**
 * Game day (SPEC §7 "A reload never cuts a call"; the guide's "Hitless through operations"), not part
 * of `npm test`: `npm run gameday` (GAMEDAY_SECONDS, default 60; `.ci/run` bounds it).
 *
 * Two gateway replicas (real `gateway start` processes, `reload.watch` on) share a Redis with
 * persistence, in front of a pool of three upstream instances with health checks, retries, outlier
 * detection, plans with priorities and adaptive shedding. Steady mixed traffic (GETs of two plans,
 * POSTs, streamed bodies, a WebSocket, and one caller whose every call is counted) runs through six
 * phases: steady; an instance killed and restarted; the configuration rewritten three times; Redis
 * restarted; each gateway replica restarted in turn (a rolling deploy); steady again.
 *
 * It fails (exit 1) on any good call lost: a status the scenario did not ask for, a cut stream, a
 * WebSocket closed other than by the kill of its instance or the restart of its replica, a POST an
 * instance received twice, or a counted caller whose count in Redis differs from the calls it made.
 * The scenario asks only for the calls in flight on the instance at its kill. It prints each phase.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import WebSocket from "ws";
import { stringify } from "yaml";
import { scrape } from "../helpers/prom.js";
import { freePort, RedisServer } from "../helpers/redis-server.js";
import { call, Instance, Replica } from "./parts.js";

const SECONDS = Math.max(30, Number(process.env.GAMEDAY_SECONDS ?? 60));
const PHASE_MS = (SECONDS * 1000) / 6;
const dir = mkdtempSync(path.join(tmpdir(), "gameday-"));
const tokensFile = path.join(dir, "tokens.yaml");
writeFileSync(
  tokensFile,
  stringify({
    "free-token": { active: true, sub: "fiona", plan: "free", scope: "read write" },
    "pro-token": { active: true, sub: "paul", plan: "pro", scope: "read write" },
    "counted-token": { active: true, sub: "carol", plan: "pro", scope: "read" },
  }),
);

let phase = "start";
const stats = new Map<string, { ok: number; lost: number; asked: number }>();
const losses: string[] = [];
/** Calls that failed, judged at the end (the access lines say which endpoint they went to). */
const failedCalls: Array<{ key: string; id: string; what: string }> = [];
function record(kind: string, id: string, ok: boolean, what: string): void {
  const key = `${phase}\t${kind}`;
  const s = stats.get(key) ?? { ok: 0, lost: 0, asked: 0 };
  if (ok) s.ok++;
  else failedCalls.push({ key, id, what });
  stats.set(key, s);
}

/**
 * A failed call is asked for when it was in flight to the killed instance: its handler had it, or
 * the gateway's access line names that endpoint (its bytes were on their way when it died). Every
 * other failure is a good call lost.
 */
function judge(replicas: Replica[], killed: string, cut: ReadonlySet<string>): void {
  for (const f of failedCalls) {
    const s = stats.get(f.key)!;
    const line = replicas.map((r) => r.failed.get(f.id)).find((l) => l !== undefined);
    if (cut.has(f.id) || line?.endpoint === killed) s.asked++;
    else {
      s.lost++;
      if (losses.length < 40) losses.push(`${f.key.replace("\t", " ")} ${f.id}: ${f.what}`);
    }
  }
}

function configOf(
  r: { apiPort: number; adminPort: number },
  instances: Instance[],
  redisUrl: string,
  v: number,
) {
  return {
    listen: { host: "127.0.0.1", port: r.apiPort, grace_ms: 3_000 },
    admin: { host: "127.0.0.1", port: r.adminPort },
    reload: { watch: true },
    upstreams: {
      docs: {
        endpoints: instances.map((i) => ({ url: i.url })),
        timeout_ms: 5_000 + v, // each rewrite changes a per-call setting
        health_check: { path: "/health", interval_ms: 500, timeout_ms: 400, healthy_threshold: 1 },
        adaptive_concurrency: { min_limit: 20, max_limit: 500 },
      },
    },
    routes: [
      { prefix: "/v1", upstream: "docs", retries: { attempts: 2 } },
      ...(v % 2 === 1 ? [{ prefix: "/v2", upstream: "docs" }] : []),
    ],
    auth: { realm: "api", static: { tokens_file: tokensFile } },
    load_shedding: { priorities: { pro: "critical", free: "sheddable" } },
    rate_limits: {
      store: { redis: { url: redisUrl, key_prefix: "gameday" } },
      failure_mode: "open",
      plan_claim: "plan",
      plans: { free: {}, pro: {} },
      classes: {
        counted: { match: { paths: ["/v1/counted"] }, windows: [{ limit: 1_000_000, window_s: 3600 }] },
        read: { match: { methods: ["GET"] }, windows: [{ limit: 1_000_000 + v, window_s: 3600 }] },
        write: { match: { methods: ["POST"] }, windows: [{ limit: 1_000_000, window_s: 3600 }] },
      },
      anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
    },
    log: { level: "info" },
  };
}

async function main(): Promise<void> {
  const redis = await RedisServer.start(["--appendonly", "yes", "--appendfsync", "always"]);
  const posts = new Map<string, number>();
  const instances = [new Instance("a", await freePort(), posts)];
  instances.push(new Instance("b", await freePort(), posts), new Instance("c", await freePort(), posts));
  for (const i of instances) await i.start();
  const replicas: Replica[] = [];
  for (const name of ["g1", "g2"]) {
    const [apiPort, adminPort] = [await freePort(), await freePort()];
    replicas.push(new Replica(name, apiPort, adminPort, path.join(dir, `${name}.yaml`)));
  }
  let version = 0;
  const writeConfigs = () => {
    for (const r of replicas)
      writeFileSync(r.configFile, stringify(configOf(r, instances, redis.url, version)));
  };
  writeConfigs();
  for (const r of replicas) await r.start();

  const end = { now: false };
  const cut = new Set<string>();
  let counted = 0;
  let countedPaused = false;
  let n = 0;
  const auth = (t: string) => ({ authorization: `Bearer ${t}` });
  const loop = async (kind: string, fn: (id: string, turn: number) => Promise<void>) => {
    while (!end.now) await fn(`gd-${kind}-${++n}`, n);
  };
  const loops = [
    ...["free-token", "pro-token", "free-token", "pro-token"].map((token) =>
      loop("get", async (id, turn) => {
        const a = await call(replicas, turn, "GET", `/v1/items/${turn}`, {
          ...auth(token),
          "x-request-id": id,
        });
        record("get", id, a.status === 200, `${a.status} ${a.error} ${a.body.slice(0, 80)}`);
      }),
    ),
    ...[1, 2].map(() =>
      loop("post", async (id, turn) => {
        const headers = { ...auth("pro-token"), "x-request-id": id, "content-type": "text/plain" };
        const a = await call(replicas, turn, "POST", "/v1/items", headers, `body-${id}`);
        record("post", id, a.status === 201 && a.body === `created body-${id}`, `${a.status} ${a.error}`);
      }),
    ),
    loop("stream", async (id, turn) => {
      const a = await call(replicas, turn, "GET", "/v1/stream", { ...auth("pro-token"), "x-request-id": id });
      const whole = Array.from({ length: 10 }, (_, i) => `c${i + 1};`).join("");
      record("stream", id, a.status === 200 && a.body === whole, `${a.status} ${a.error} ${a.body}`);
    }),
    loop("counted", async (id, turn) => {
      if (countedPaused) return void (await new Promise((r) => setTimeout(r, 50)));
      const a = await call(replicas, turn, "GET", "/v1/counted", {
        ...auth("counted-token"),
        "x-request-id": id,
      });
      if (a.status === 200) counted++;
      record("counted", id, a.status === 200, `${a.status} ${a.error}`);
      await new Promise((r) => setTimeout(r, 20));
    }),
  ];
  const ws = webSocketLoop(replicas, end, auth("pro-token"));

  const wait = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
  const degraded = async () =>
    (
      await Promise.all(
        replicas.map((r) => scrape(r.adminUrl).then((s) => s.sum("gateway_ratelimit_store_degraded"))),
      )
    ).reduce((a, b) => a + b, 0);

  const phases: Array<[string, () => Promise<void>]> = [
    ["steady", () => wait(PHASE_MS)],
    [
      "instance killed and restarted",
      async () => {
        await wait(PHASE_MS / 4);
        for (const id of instances[2]!.kill()) cut.add(id);
        ws.killed("c");
        await wait(PHASE_MS / 4);
        await instances[2]!.start();
        const before = instances[2]!.served;
        await wait(PHASE_MS / 2);
        if (instances[2]!.served - before < 10)
          losses.push(`instance c served ${instances[2]!.served - before} calls after its restart`);
      },
    ],
    [
      "configuration rewritten three times",
      async () => {
        for (let i = 0; i < 3; i++) {
          const reloads = replicas.map((r) => r.count("configuration reloaded"));
          version++;
          writeConfigs();
          await wait(PHASE_MS / 3);
          replicas.forEach((r, j) => {
            if (r.count("configuration reloaded") <= reloads[j]!)
              losses.push(`${r.name} did not apply rewrite ${version}`);
          });
        }
      },
    ],
    [
      "Redis restarted",
      async () => {
        countedPaused = true;
        await wait(200);
        await redis.stop();
        await wait(PHASE_MS / 3);
        await redis.start();
        const until = Date.now() + 15_000;
        while ((await degraded()) > 0 && Date.now() < until) await wait(100);
        if ((await degraded()) > 0) losses.push("a replica still degraded 15 s after Redis returned");
        countedPaused = false;
        await wait(PHASE_MS / 2);
      },
    ],
    [
      "gateway replicas restarted in turn",
      async () => {
        for (const r of replicas) {
          // A rolling deploy: the load balancer stops sending new calls to the replica first (a
          // Kubernetes Service after the readiness change, behind the README's preStop delay),
          // then SIGTERM lets the calls it has finish.
          r.inRotation = false;
          await wait(500);
          ws.restarting(r.name);
          const code = await r.stop();
          if (code !== 0) losses.push(`${r.name} exited with ${code} on SIGTERM`);
          await r.start();
          r.inRotation = true;
          await wait(PHASE_MS / 3);
        }
      },
    ],
    ["steady again", () => wait(PHASE_MS)],
  ];
  try {
    for (const [name, run] of phases) {
      phase = name;
      const t0 = Date.now();
      await run();
      ws.clear();
      const seen = await countedInRedis(replicas, auth("counted-token"));
      console.log(
        `phase "${name}" done in ${((Date.now() - t0) / 1000).toFixed(1)} s; counted caller: ${counted} calls, Redis ${seen}`,
      );
    }
  } finally {
    end.now = true;
    await Promise.all(loops);
    await ws.done;
  }
  // Checks that need the whole run (the last access lines are written within 1 s).
  await new Promise((r) => setTimeout(r, 1_500));
  judge(replicas, `127.0.0.1:${instances[2]!.port}`, cut);
  for (const [id, times] of posts)
    if (times > 1) losses.push(`POST ${id} reached the instances ${times} times`);
  const used = await countedInRedis(replicas, auth("counted-token"));
  // A counted call cut by the kill was counted before it was proxied: it is a call made too.
  for (const [key, s] of stats) if (key.endsWith("\tcounted")) counted += s.asked;
  if (used !== counted) losses.push(`counted caller: ${counted} calls made, Redis says ${used}`);
  console.log("\nphase\tkind\tok\tlost\tasked for (cut by the kill)");
  for (const [key, s] of stats) console.log(`${key}\t${s.ok}\t${s.lost}\t${s.asked}`);
  console.log(`websocket: ${ws.summary()}`);
  console.log(`counted caller: ${counted} calls, Redis ${used}`);
  for (const r of replicas) r.kill();
  for (const i of instances) i.kill();
  await redis.destroy();
  rmSync(dir, { recursive: true, force: true });
  const lost = [...stats.values()].reduce((a, s) => a + s.lost, 0);
  if (lost > 0 || losses.length > 0) {
    console.log(`\nGAME DAY FAILED: ${lost} good calls lost`);
    for (const l of losses) console.log(`  ${l}`);
    process.exit(1);
  }
  console.log("\ngame day passed: no good call lost");
  process.exit(0);
}

/** The counted caller's `used` in its class, as `GET /rate_limit` reads it from Redis. */
async function countedInRedis(
  replicas: Replica[],
  headers: Record<string, string>,
): Promise<number | undefined> {
  const status = await call(replicas, 0, "GET", "/rate_limit", headers);
  return (JSON.parse(status.body) as { resources: Record<string, { used: number }> }).resources.counted?.used;
}

/**
 * One WebSocket client echoing every 100 ms, reconnecting when closed. A close is asked for only
 * when its instance was killed or its replica restarted; a handshake that fails is asked for only
 * within 3 s of the kill, while the gateway has not yet seen the instance fail its probes (a
 * handshake is not retried on another endpoint: see the README's WebSocket notes).
 */
function webSocketLoop(replicas: Replica[], end: { now: boolean }, headers: Record<string, string>) {
  let echoes = 0;
  let expected = 0;
  let unexpected = 0;
  let refusedAfterKill = 0;
  let killedAt = -Infinity;
  const expect = new Set<string>();
  const done = (async () => {
    let turn = 0;
    while (!end.now) {
      const r = replicas[turn++ % replicas.length]!;
      if (!r.inRotation) continue;
      await new Promise<void>((resolve) => {
        const ws = new WebSocket(`${r.url.replace(/^http/, "ws")}/v1/socket`, { headers });
        let opened = false;
        let instance = "";
        const timer = setInterval(() => ws.readyState === WebSocket.OPEN && ws.send(`m${echoes}`), 100);
        ws.on("open", () => (opened = true));
        ws.on("message", (d) => {
          echoes++;
          instance = String(d).split(":")[1] ?? "";
        });
        ws.on("error", () => {});
        ws.on("close", () => {
          clearInterval(timer);
          if (end.now) return resolve();
          if (!opened && Date.now() - killedAt < 3_000) refusedAfterKill++;
          else if (!opened) {
            unexpected++;
            losses.push(`${phase}: WebSocket handshake via ${r.name} failed`);
          } else if (expect.has(r.name) || expect.has(instance)) expected++;
          else {
            unexpected++;
            losses.push(`${phase}: WebSocket via ${r.name} to instance ${instance} closed`);
          }
          setTimeout(resolve, 100);
        });
        const stop = setInterval(() => {
          if (end.now) {
            clearInterval(stop);
            ws.close();
          }
        }, 100);
        ws.once("close", () => clearInterval(stop));
      });
    }
  })();
  return {
    done,
    killed: (name: string) => {
      killedAt = Date.now();
      expect.add(name);
    },
    restarting: (name: string) => expect.add(name),
    clear: () => expect.clear(),
    summary: () =>
      `${echoes} echoes, ${expected} closes asked for, ${refusedAfterKill} handshakes refused within 3 s of the kill, ${unexpected} not asked for`,
  };
}

await main();
