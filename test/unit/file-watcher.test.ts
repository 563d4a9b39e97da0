/**
 * The watcher behind `reload.watch` (SPEC §20) on a real directory: a content change is one
 * `onChange` after the quiet period, a burst of changes is one, and an event that changes no
 * watched content (a `touch`, an editor's swap file beside it) is none.
 */
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FileWatcher } from "../../gateway/config/watch.js";

const QUIET_MS = 50;
let dir: string;
let file: string;
let watcher: FileWatcher | undefined;
let changes: number;
let waiting: (() => void) | undefined;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "gateway-watch-"));
  file = path.join(dir, "gateway.yaml");
  writeFileSync(file, "a: 1\n");
  changes = 0;
  watcher = new FileWatcher([file], {
    quietMs: QUIET_MS,
    pollMs: 100,
    onChange: () => {
      changes += 1;
      waiting?.();
    },
  });
});

afterEach(() => {
  watcher?.close();
  rmSync(dir, { recursive: true, force: true });
});

const nextChange = () => new Promise<void>((resolve) => (waiting = resolve));
/** Long enough for a quiet period and two polls to have passed. */
const settle = () => new Promise((r) => setTimeout(r, QUIET_MS + 300));

describe("FileWatcher", () => {
  it("calls onChange once for a changed file, and once for a burst", async () => {
    const first = nextChange();
    writeFileSync(file, "a: 2\n");
    await first;
    const second = nextChange();
    for (let i = 3; i < 8; i++) writeFileSync(file, `a: ${i}\n`);
    await second;
    await settle();
    expect(changes).toBe(2);
  });

  it("does not call it for a touch or another file of the directory", async () => {
    utimesSync(file, new Date(), new Date(Date.now() + 5000));
    writeFileSync(path.join(dir, ".gateway.yaml.swp"), "editor state");
    await settle();
    expect(changes).toBe(0);
  });
});
