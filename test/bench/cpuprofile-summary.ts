/**
 * Aggregates a V8 `.cpuprofile` (`node --cpu-prof`) by self time: per function + script + line,
 * with Node's own code (`node:*` URLs) folded into one group per module, plus a summary by owner
 * (gateway, each npm package, node internals, GC, idle).
 *
 * CLI: `node --import tsx test/bench/cpuprofile-summary.ts <file.cpuprofile> [top]`
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** One aggregated frame. */
export interface Frame {
  name: string;
  owner: string;
  selfMs: number;
}

/** Who a script belongs to: `gateway`, an npm package, `node internals`, or a V8 pseudo-frame. */
export function ownerOf(url: string, fn: string): string {
  if (url === "") {
    if (/^\(.*\)$/.test(fn)) return fn; // (garbage collector), (program), (idle), (root)
    if (fn.startsWith("RegExp: ")) return "regexp (V8)";
    return "native (C++ bindings, syscalls)";
  }
  if (url.startsWith("node:")) return "node internals";
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (nm !== null) return nm[1]!;
  if (url.includes("/dist/gateway/") || url.includes("/gateway/")) return "gateway";
  return "other";
}

function shortUrl(url: string): string {
  const nm = /node_modules\/(.*)$/.exec(url);
  if (nm !== null) return nm[1]!;
  const gw = /\/(dist\/gateway\/.*|gateway\/.*|test\/.*)$/.exec(url);
  if (gw !== null) return gw[1]!;
  return url.replace(/^file:\/\//, "");
}

/** Self time per frame (ms); node internals folded per module. */
export function aggregate(profile: CpuProfile): {
  frames: Frame[];
  owners: Map<string, number>;
  totalMs: number;
} {
  const byId = new Map<number, ProfileNode>();
  for (const n of profile.nodes) byId.set(n.id, n);
  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    // timeDeltas[i] is the time since the previous sample: attribute it to this sample's node.
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const frames = new Map<string, Frame>();
  const owners = new Map<string, number>();
  let totalUs = 0;
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const owner = ownerOf(url, functionName);
    totalUs += us;
    owners.set(owner, (owners.get(owner) ?? 0) + us / 1000);
    const name =
      owner === "node internals"
        ? `(node internals) ${url}`
        : url === ""
          ? functionName.startsWith("RegExp: ")
            ? "(regexps)"
            : functionName
          : `${functionName || "(anonymous)"} ${shortUrl(url)}:${lineNumber + 1}`;
    const f = frames.get(name) ?? { name, owner, selfMs: 0 };
    f.selfMs += us / 1000;
    frames.set(name, f);
  }
  return {
    frames: [...frames.values()].sort((a, b) => b.selfMs - a.selfMs),
    owners,
    totalMs: totalUs / 1000,
  };
}

/**
 * Inclusive time: each sample's time counted once for every owner, and every gateway function,
 * on its stack (so `pino` includes the redaction and the write it calls, `http-proxy-3` the Node
 * HTTP client it drives).
 */
export function inclusive(profile: CpuProfile): {
  owners: Map<string, number>;
  gatewayFns: Map<string, number>;
} {
  const parent = new Map<number, number>();
  const byId = new Map<number, ProfileNode>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const owners = new Map<string, number>();
  const gatewayFns = new Map<string, number>();
  const stackCache = new Map<number, { owners: string[]; fns: string[] }>();
  const stackOf = (id: number) => {
    let s = stackCache.get(id);
    if (s !== undefined) return s;
    const o = new Set<string>();
    const f = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const { functionName, url, lineNumber } = byId.get(cur)!.callFrame;
      const owner = ownerOf(url, functionName);
      o.add(owner);
      if (owner === "gateway") f.add(`${functionName || "(anonymous)"} ${shortUrl(url)}:${lineNumber + 1}`);
    }
    s = { owners: [...o], fns: [...f] };
    stackCache.set(id, s);
    return s;
  };
  for (let i = 0; i < profile.samples.length; i++) {
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    const st = stackOf(profile.samples[i]!);
    for (const o of st.owners) owners.set(o, (owners.get(o) ?? 0) + ms);
    for (const f of st.fns) gatewayFns.set(f, (gatewayFns.get(f) ?? 0) + ms);
  }
  return { owners, gatewayFns };
}

/** Markdown summary: top frames by self time (idle excluded from percentages) and owners. */
export function summarize(file: string, top = 15, requests?: number): string {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const { frames, owners, totalMs } = aggregate(profile);
  const busyMs = totalMs - (owners.get("(idle)") ?? 0);
  const pct = (ms: number) => `${((ms / busyMs) * 100).toFixed(1)}%`;
  const perReq = (ms: number) => (requests === undefined ? "" : ` | ${((ms * 1000) / requests).toFixed(2)}`);
  const head = requests === undefined ? "" : " | µs/req";
  const sep = requests === undefined ? "" : " | ---:";
  const out = [
    `busy ${busyMs.toFixed(0)} ms of ${totalMs.toFixed(0)} ms sampled` +
      (requests === undefined
        ? ""
        : `, ${requests} requests (${((busyMs * 1000) / requests).toFixed(1)} µs/req busy)`),
    "",
    `| # | frame (self time) | ms | % busy${head} |`,
    `| ---: | --- | ---: | ---:${sep} |`,
  ];
  frames
    .filter((f) => f.owner !== "(idle)")
    .slice(0, top)
    .forEach((f, i) =>
      out.push(`| ${i + 1} | \`${f.name}\` | ${f.selfMs.toFixed(0)} | ${pct(f.selfMs)}${perReq(f.selfMs)} |`),
    );
  const inc = inclusive(profile);
  out.push(
    "",
    `| owner | self ms | % busy${head} | inclusive ms${head} |`,
    `| --- | ---: | ---:${sep} | ---:${sep} |`,
  );
  for (const [o, ms] of [...owners].sort((a, b) => b[1] - a[1])) {
    if (o === "(idle)" || ms < busyMs / 500) continue;
    const im = inc.owners.get(o) ?? 0;
    out.push(`| ${o} | ${ms.toFixed(0)} | ${pct(ms)}${perReq(ms)} | ${im.toFixed(0)}${perReq(im)} |`);
  }
  out.push("", `| gateway function (inclusive) | ms | % busy${head} |`, `| --- | ---: | ---:${sep} |`);
  for (const [f, ms] of [...inc.gatewayFns].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    out.push(`| \`${f}\` | ${ms.toFixed(0)} | ${pct(ms)}${perReq(ms)} |`);
  }
  return out.join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (file === undefined) {
    console.error("usage: cpuprofile-summary.ts <file.cpuprofile> [top]");
    process.exitCode = 2;
  } else {
    console.log(summarize(file, Number(process.argv[3] ?? 15)));
  }
}
