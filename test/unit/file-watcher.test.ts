/**
 * The watcher behind `reload.watch` (SPEC §20) on a real directory: a content change is one
 * `onChange` after the quiet period, a burst of changes is one, and an event that changes no
 * watched content (a `touch`, an editor's swap file beside it) is none. Another file written
 * continuously in the same directory never delays it, and the quiet period's end is decided for the
 * latest change only, after the events already arrived are read.
 */
import { mkdtempSync, rmSync, utimesSync, watch, writeFileSync } from "node:fs";
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

  it("is not delayed by another file of the directory written every 20 ms", async () => {
    const sibling = path.join(dir, "access.log");
    let writes = 0;
    // Bounded: 150 writes (3 s), far longer than the change needs.
    const writer = setInterval(() => {
      writeFileSync(sibling, `line ${++writes}\n`, { flag: "a" });
      if (writes >= 150) clearInterval(writer);
    }, 20);
    try {
      await new Promise((r) => setTimeout(r, 200)); // the sibling's events are flowing
      const changed = nextChange();
      const writtenAt = performance.now();
      writeFileSync(file, "a: 2\n");
      await changed;
      // One quiet period after the write (plus a loaded machine's slack), not after the sibling stops.
      expect(performance.now() - writtenAt).toBeLessThan(1000);
      expect(writes).toBeLessThan(150);
      expect(changes).toBe(1);
    } finally {
      clearInterval(writer);
    }
  });

  it("decides for the latest change only: one read while the decision waits for pending I/O restarts the quiet period", async () => {
    // The test's own watch on the directory is served in the same poll phase as the watcher's, so
    // the timer it arms is due with the watcher's quiet timer and runs in the same timers phase. It writes the file again: that event is read after the quiet timer fired and before the
    // decision (which waits for the I/O already arrived). Deciding for the first write then would
    // report a change at once; the second write restarts the quiet period instead.
    let writtenAt = 0;
    let timer: NodeJS.Timeout | undefined;
    const w = watch(dir, () => {
      w.close();
      // A millisecond early, so it never runs after the decision it is meant to precede.
      timer = setTimeout(() => {
        writtenAt = performance.now();
        writeFileSync(file, "a: 3 (and the rest)\n");
      }, QUIET_MS - 1);
    });
    const changed = nextChange();
    writeFileSync(file, "a: 2\n");
    await changed;
    clearTimeout(timer);
    expect(writtenAt).toBeGreaterThan(0);
    expect(performance.now() - writtenAt).toBeGreaterThanOrEqual(QUIET_MS - 5);
    expect(changes).toBe(1);
  });
});
