/**
 * The `gateway` command turns V8's concurrent marking off on V8 before 12 (Node 20), where it had young
 * collections promote proxied requests' objects (`gateway/cli/gc-tuning.ts`), and leaves
 * newer V8 and an operator's own `node` flag alone.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { needsGcTuning } from "../../gateway/cli/gc-tuning.js";

it("applies to V8 11 (Node 20) and not to V8 12 or later (Node 22, 24)", () => {
  expect(needsGcTuning("11.3.244.8-node.33", [])).toBe(true);
  expect(needsGcTuning("12.4.254.21-node.33", [])).toBe(false);
  expect(needsGcTuning("13.6.233.10-node.27", [])).toBe(false);
  expect(needsGcTuning("not a version", [])).toBe(false);
});

it("leaves a node flag that names concurrent marking or a single-threaded collector alone", () => {
  for (const flag of [
    "--concurrent-marking",
    "--no-concurrent-marking",
    "--noconcurrent-marking",
    "--no_concurrent_marking",
    "--concurrent_marking",
    "--single-threaded-gc",
    "--single-threaded",
    "--predictable",
  ]) {
    expect(needsGcTuning("11.3.244.8-node.33", ["--enable-source-maps", flag])).toBe(false);
  }
  expect(
    needsGcTuning("11.3.244.8-node.33", ["--max-old-space-size=384", "--concurrent-recompilation"]),
  ).toBe(true);
});

it("the flag is one this runtime's V8 accepts", () => {
  // V8 ignores an unknown flag passed through setFlagsFromString; `node` refuses one on its
  // command line, so a run with it proves the name is right for the Node that runs the tests.
  const r = spawnSync(process.execPath, ["--no-concurrent-marking", "-e", "0"], {
    encoding: "utf8",
    env: { ...process.env, NODE_OPTIONS: "" },
  });
  expect(r.stderr).not.toMatch(/bad option/);
  expect(r.status).toBe(0);
});

it("sets the flag on V8 11 and reports it, and leaves newer V8 alone", () => {
  // In a child: the flag set late in this test process would change its collector for the files
  // that run after this one.
  const script =
    'const { tuneGarbageCollector: t } = await import("./gateway/cli/gc-tuning.ts");' +
    'console.log(JSON.stringify([t("11.3.244.8-node.33", []), t("12.4.254.21-node.33", []), ' +
    't("11.3.244.8-node.33", ["--concurrent-marking"])]));';
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    encoding: "utf8",
    cwd: new URL("../../", import.meta.url),
  });
  expect(r.stderr).toBe("");
  expect(JSON.parse(r.stdout)).toEqual([true, false, false]);
});

it("comes before the rest of the gateway loads: the entry imports nothing else statically", () => {
  // Set later (after the modules loaded) the flag made promotion far worse (gc-tuning.ts).
  const main = readFileSync(new URL("../../gateway/main.ts", import.meta.url), "utf8");
  const imports = [...main.matchAll(/^import .*$/gm)].map((m) => m[0]);
  expect(imports).toEqual([`import { tuneGarbageCollector } from "./cli/gc-tuning.js";`]);
  expect(main).toMatch(/tuneGarbageCollector\(\);\nawait import\("\.\/cli\/command\.js"\)/);
});
