/**
 * The image against a real redis-server, as the Kubernetes Deployment runs it: two replicas with the
 * Deployment's security context (read from config/kubernetes/deployment.yaml and turned into podman
 * options) sharing one limit through Redis keys under the configured prefix.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import { request } from "../helpers/http.js";
import { cli, RedisServer } from "../helpers/redis-server.js";
import { BEARER, type Checks, configMounts, writeConfig } from "./fixtures.js";
import { assertSpec429, rateLimitHeaders, type Run, runOptions, waitReady } from "./memory-store.js";
import { inspect, podman, podmanOk } from "./podman.js";

interface PodContainer {
  env?: { name: string; value?: string }[];
  volumeMounts?: { name: string; mountPath: string }[];
  securityContext?: {
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    runAsUser?: number;
    runAsGroup?: number;
    capabilities?: { drop?: string[] };
  };
}
interface PodSpec {
  securityContext?: { runAsUser?: number; runAsGroup?: number };
  containers: PodContainer[];
  volumes?: { name: string; emptyDir?: object }[];
}

/**
 * The `podman run` options that give a container what the Deployment's pod spec gives it: user,
 * read-only root with the emptyDir mounts as tmpfs, dropped capabilities, no privilege escalation,
 * and the plain-value environment.
 */
export function deploymentRunOptions(root: string): string[] {
  const text = readFileSync(path.join(root, "config/kubernetes/deployment.yaml"), "utf8");
  const doc = parseAllDocuments(text)
    .map((d) => d.toJS() as { kind?: string; spec?: { template?: { spec?: PodSpec } } })
    .find((d) => d.kind === "Deployment");
  const pod = doc?.spec?.template?.spec;
  const container = pod?.containers[0];
  assert.ok(pod !== undefined && container !== undefined, "deployment.yaml has no pod template");
  const sc = container.securityContext ?? {};
  const user = sc.runAsUser ?? pod.securityContext?.runAsUser;
  const group = sc.runAsGroup ?? pod.securityContext?.runAsGroup;
  const out: string[] = [];
  if (user !== undefined) out.push("--user", group === undefined ? `${user}` : `${user}:${group}`);
  if (sc.readOnlyRootFilesystem === true) out.push("--read-only", "--read-only-tmpfs=false");
  const emptyDirs = new Set((pod.volumes ?? []).filter((v) => v.emptyDir !== undefined).map((v) => v.name));
  for (const m of container.volumeMounts ?? []) if (emptyDirs.has(m.name)) out.push("--tmpfs", m.mountPath);
  for (const cap of sc.capabilities?.drop ?? []) out.push("--cap-drop", cap);
  if (sc.allowPrivilegeEscalation === false) out.push("--security-opt", "no-new-privileges");
  for (const e of container.env ?? []) if (e.value !== undefined) out.push("-e", `${e.name}=${e.value}`);
  return out;
}

/** Every check of the Redis run; leaves no container or redis-server behind. */
export async function redisStoreChecks(run: Run, root: string, checks: Checks): Promise<void> {
  const redis = await RedisServer.start();
  const readLimit = 4;
  const replicas = [
    { name: `${run.label}-redis-a`, apiPort: 8080, adminPort: 9090 },
    { name: `${run.label}-redis-b`, apiPort: 8081, adminPort: 9091 },
  ];
  try {
    const hardening = deploymentRunOptions(root);
    const started = await checks.check(
      "Redis store: two replicas with the Deployment's security context start and are ready",
      async () => {
        for (const r of replicas) {
          const paths = writeConfig(`${run.workDir}/${r.name}`, {
            upstreamPort: run.upstream.port,
            apiPort: r.apiPort,
            adminPort: r.adminPort,
            redisUrl: redis.url,
            readLimit,
          });
          await podmanOk([
            "run",
            "-d",
            ...runOptions(run, r.name),
            ...hardening,
            ...configMounts(paths),
            run.image,
          ]);
        }
        for (const r of replicas) await waitReady(r.name, r.adminPort);
      },
    );
    if (!started) return;

    await checks.check(
      "one limit shared by both replicas: Remaining counts down across them, then 429",
      async () => {
        const remaining: number[] = [];
        for (let i = 0; i < readLimit; i += 1) {
          const r = replicas[i % 2] ?? replicas[0];
          const res = await request(`http://127.0.0.1:${r?.apiPort}/v1/items/${i}`, { headers: BEARER });
          assert.equal(res.status, 200, res.body);
          remaining.push(rateLimitHeaders(res).remaining);
        }
        assert.deepEqual(remaining, [3, 2, 1, 0]);
        for (const r of replicas)
          assertSpec429(await request(`http://127.0.0.1:${r.apiPort}/v1/x`, { headers: BEARER }));
      },
    );

    await checks.check(
      "the counters are Redis keys under the configured prefix (redis-cli --scan)",
      async () => {
        const keys = (await cli(redis.port, "--scan", "--pattern", "ctest:*"))
          .split("\n")
          .filter((k) => k !== "");
        console.log(`      keys: ${keys.join(" ")}`);
        assert.ok(
          keys.some((k) => /^ctest:\{.+\}:read:60$/.test(k)),
          `no ctest:{identity}:read:60 key among: ${keys.join(", ")}`,
        );
        for (const k of keys) assert.ok(Number(await cli(redis.port, "PTTL", k)) > 0, `${k} has no expiry`);
      },
    );

    await checks.check(
      "read-only root file system: /app cannot be written, /tmp (emptyDir) can",
      async () => {
        const name = replicas[0]?.name ?? "";
        assert.equal(await inspect("container", name, "{{.HostConfig.ReadonlyRootfs}}"), "true");
        const app = await podman(["exec", name, "touch", "/app/x"]);
        assert.notEqual(app.code, 0);
        assert.match(app.stderr, /Read-only file system/);
        await podmanOk(["exec", name, "touch", "/tmp/x"]);
      },
    );

    await checks.check("both replicas stop on SIGTERM with exit code 0 and close Redis", async () => {
      for (const r of replicas) {
        await podmanOk(["stop", r.name], 30_000);
        assert.equal(await inspect("container", r.name, "{{.State.ExitCode}}"), "0");
      }
      const clients = await cli(redis.port, "CLIENT", "LIST");
      assert.equal(clients.split("\n").filter((l) => !/cmd=client/.test(l) && l !== "").length, 0, clients);
    });
  } finally {
    for (const r of replicas) await podman(["rm", "-f", r.name], 30_000, false);
    await redis.destroy();
  }
}
