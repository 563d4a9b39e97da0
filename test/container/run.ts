/**
 * The checks of `npm run test:container` against a built image (run.sh builds it and starts this
 * inside a network namespace of its own, so every server here is on that namespace's loopback and
 * the image keeps its own ports 8080 and 9090). Prints one line a check and `N passed, N failed`;
 * exits 1 when a check failed.
 *
 * Environment: GATEWAY_IMAGE, BASE_IMAGE, NETNS (path), RUN_LABEL, WORK_DIR.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { closeServer } from "../helpers/http.js";
import { Checks, startUpstream } from "./fixtures.js";
import { imageChecks } from "./image.js";
import { memoryStoreChecks, type Run } from "./memory-store.js";
import { podman } from "./podman.js";
import { redisStoreChecks } from "./redis-store.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === "") throw new Error(`${name} is not set (run test/container/run.sh)`);
  return value;
}

async function main(): Promise<boolean> {
  const checks = new Checks();
  const upstream = await startUpstream();
  const run: Run = {
    image: env("GATEWAY_IMAGE"),
    netns: env("NETNS"),
    label: env("RUN_LABEL"),
    workDir: env("WORK_DIR"),
    upstream,
  };
  try {
    await memoryStoreChecks(run, checks);
    await redisStoreChecks(run, ROOT, checks);
    await imageChecks(run, ROOT, env("BASE_IMAGE"), checks);
  } finally {
    const left = await podman(
      ["ps", "-aq", "--filter", `label=gateway-container-test=${run.label}`],
      30_000,
      false,
    );
    for (const id of left.stdout.split("\n").filter((l) => l !== ""))
      await podman(["rm", "-f", id], 30_000, false);
    await closeServer(upstream.server);
  }
  return checks.report();
}

main().then(
  (ok) => process.exit(ok ? 0 : 1),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
