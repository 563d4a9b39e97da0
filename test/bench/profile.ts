/**
 * `npm run bench:profile`: runs the gateway (built dist/) under `node --cpu-prof` on the memory
 * store (cell c) and on Redis (cell d), each for BENCH_PROFILE_SECONDS (10) of wrk load after a
 * warm-up, stops it with SIGTERM (the profile is written at exit) and prints the top self-time
 * frames per profile (cpuprofile-summary.ts). Writes the summaries to test/bench/runs/last-profile.md and
 * keeps the .cpuprofile files in test/bench/profiles/ (open them in Chrome DevTools).
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { summarize } from "./cpuprofile-summary.js";
import { isPinned, pinSelf } from "./procs.js";
import { startGateway, startRedis, startUpstream, writeWarmTokens, type GatewayVariant } from "./targets.js";
import { ensureWrk, runWrk, staticTokenScript } from "./wrk.js";

const PROFILE_DIR = fileURLToPath(new URL("./profiles/", import.meta.url));
const LAST_PROFILE = fileURLToPath(new URL("./runs/last-profile.md", import.meta.url));
const TOKEN = "bench-warm-token";

export async function profileMain(): Promise<number> {
  const missing = ensureWrk();
  if (missing !== null) {
    console.error(missing);
    return 1;
  }
  pinSelf();
  const seconds = Math.min(Math.max(Number(process.env.BENCH_PROFILE_SECONDS ?? 10) || 10, 1), 120);
  const connections = Math.min(Math.max(Number(process.env.BENCH_CONNECTIONS ?? 64) || 64, 1), 1024);
  const dir = mkdtempSync(path.join(tmpdir(), "gateway-profile-"));
  mkdirSync(PROFILE_DIR, { recursive: true });
  const upstream = await startUpstream();
  const redis = await startRedis(dir);
  const out: string[] = [
    `### CPU profile ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC`,
    "",
    `\`npm run bench:profile\`: gateway from dist/ under \`node --cpu-prof\`, ${seconds} s of wrk ` +
      `(${connections} connections, warm token) after a 2 s warm-up; ${isPinned ? "pinned as in the bench" : "unpinned"}. ` +
      "Self time per frame; Node's own modules folded per module.",
  ];
  try {
    const tokensFile = writeWarmTokens(dir, TOKEN);
    const script = staticTokenScript(dir, TOKEN);
    const variants: [string, GatewayVariant][] = [
      ["c-memory", { tokensFile }],
      ["d-redis", { tokensFile, redisUrl: redis.url, keyPrefix: "bp" }],
    ];
    for (const [name, v] of variants) {
      const file = `${name}.cpuprofile`;
      rmSync(path.join(PROFILE_DIR, file), { force: true });
      const gw = await startGateway(name, dir, upstream.url, {
        ...v,
        nodeArgs: ["--cpu-prof", "--cpu-prof-dir", PROFILE_DIR, "--cpu-prof-name", file],
      });
      try {
        await runWrk(`${gw.url}/v1/user`, { seconds: 2, connections, script });
        const w = await runWrk(`${gw.url}/v1/user`, { seconds, connections, script });
        console.log(
          `${name}: ${w.rps.toFixed(0)} req/s under the profiler (${w.requests} requests, non-2xx ${w.non2xx})`,
        );
        await gw.child.stop(15_000);
        if (!readdirSync(PROFILE_DIR).includes(file)) throw new Error(`${name}: no profile written`);
        out.push("", `#### ${name} (${w.rps.toFixed(0)} req/s under the profiler)`, "");
        // The warm-up requests are in the profile too.
        out.push(summarize(path.join(PROFILE_DIR, file), 15, w.requests + Math.round(w.rps * 2)));
      } finally {
        await gw.child.stop();
      }
    }
    const md = out.join("\n") + "\n";
    console.log(`\n${md}`);
    writeFileSync(LAST_PROFILE, md);
    console.log(
      `written to ${path.relative(process.cwd(), LAST_PROFILE)}; profiles in ${path.relative(process.cwd(), PROFILE_DIR)}`,
    );
    return 0;
  } finally {
    await Promise.all([upstream.child.stop(), redis.child.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }
}
