/**
 * `reload: { watch: true }` (SPEC §20): notices that the configuration file, or a file it names,
 * has changed, and asks for one reload per burst of changes.
 *
 * What it watches is the *directories* holding those files, not the files: a Kubernetes ConfigMap
 * or Secret volume swaps a symbolic link (`..data`) to a new directory rather than editing the
 * file, and an editor saves by writing a new file and renaming it over the old one; in both cases
 * a watch on the old file would see nothing more (its inode is gone), while its directory sees the
 * rename. A stat of each file every {@link POLL_MS} (following symbolic links) backs that up where
 * directory events are not delivered (network file systems, some container mounts).
 *
 * An event only starts the quiet period: changes less than {@link QUIET_MS} apart are one change,
 * acted on after the last of them. Then the files' contents are hashed, and `onChange` runs only
 * when that hash differs from the last one seen (an editor's swap file, an unrelated file of the
 * same directory, a `touch` change nothing).
 *
 * Only a change of the watched files themselves restarts the quiet period: an event after which
 * their stat (through links: inode, size, mtime) is what the last event saw comes from another file
 * of the directory, and it starts a quiet period when none is running but never prolongs one. So a
 * log or lock file written every 200 ms beside the configuration no longer delays its reload
 * indefinitely (it did by 12 s): the reload comes {@link QUIET_MS} after the configuration's last
 * write, however busy the directory (SPEC §20: never past 5 s).
 */
import { createHash } from "node:crypto";
import { readFileSync, statSync, watch, type FSWatcher } from "node:fs";
import path from "node:path";
import { afterPendingIo } from "../base/after-pending-io.js";
import type { Milliseconds } from "../base/clock.js";

/** Changes closer together than this are one (SPEC §20). */
export const QUIET_MS: Milliseconds = 500;
/** The stat poll's period, behind the directory events. */
export const POLL_MS: Milliseconds = 2_000;

/** Options of {@link FileWatcher}. */
export interface FileWatcherOptions {
  /** Runs once per burst of changes that changed a file's content. */
  onChange: () => void;
  /** Told when a directory cannot be watched (the poll still runs). */
  onWatchError?: (dir: string, err: Error) => void;
  /** @default {@link QUIET_MS} (ms) */
  quietMs?: Milliseconds;
  /** @default {@link POLL_MS} (ms) */
  pollMs?: Milliseconds;
}

/** Content hash of `files` (a missing file hashes as missing). */
function contentHash(files: readonly string[]): string {
  const h = createHash("sha256");
  for (const f of files) {
    h.update(`\0${f}\0`);
    try {
      h.update(readFileSync(f));
    } catch {
      h.update("(missing)");
    }
  }
  return h.digest("hex");
}

/** What a stat sees of `files` through their links: inode, size and mtime of each target. */
function statSignature(files: readonly string[]): string {
  return files
    .map((f) => {
      try {
        const s = statSync(f);
        return `${s.ino}:${s.size}:${s.mtimeMs}`;
      } catch {
        return "-";
      }
    })
    .join("|");
}

/** Watches a set of files for content changes (see the module comment). */
export class FileWatcher {
  readonly #opts: Required<Omit<FileWatcherOptions, "onWatchError">> &
    Pick<FileWatcherOptions, "onWatchError">;
  readonly #dirs = new Map<string, FSWatcher>();
  #files: string[] = [];
  #hash = "";
  #signature = "";
  #quiet: NodeJS.Timeout | undefined;
  /** The quiet timer is armed and has not settled yet. */
  #pending = false;
  readonly #poll: NodeJS.Timeout;
  #closed = false;
  /** Quiet periods started so far: one ends only if it is the latest (none restarted it since). */
  #arms = 0;
  /** The watched files' stat as the last event saw it: an event that leaves it is another file's. */
  #eventSignature = "";

  /** @param files - absolute paths; their current content is the baseline */
  constructor(files: readonly string[], opts: FileWatcherOptions) {
    this.#opts = { quietMs: QUIET_MS, pollMs: POLL_MS, ...opts };
    this.setFiles(files);
    this.#poll = setInterval(() => {
      if (statSignature(this.#files) !== this.#signature) this.#changed();
    }, this.#opts.pollMs);
    this.#poll.unref();
  }

  /**
   * Watches `files` from now on. The same files keep their baseline (the content the last change
   * was noticed with, which the reload read or which a write during the reload has since replaced,
   * and which is then noticed in turn); another set takes its current content as the baseline.
   */
  setFiles(files: readonly string[]): void {
    if (files.length === this.#files.length && files.every((f, i) => f === this.#files[i])) return;
    this.#files = [...files];
    this.#hash = contentHash(this.#files);
    this.#signature = statSignature(this.#files);
    this.#eventSignature = this.#signature;
    const dirs = new Set(this.#files.map((f) => path.dirname(f)));
    for (const [dir, w] of this.#dirs) {
      if (dirs.has(dir)) continue;
      w.close();
      this.#dirs.delete(dir);
    }
    for (const dir of dirs) {
      if (this.#dirs.has(dir)) continue;
      try {
        const w = watch(dir, { persistent: false }, () => this.#changed());
        w.on("error", (err) => this.#opts.onWatchError?.(dir, err));
        this.#dirs.set(dir, w);
      } catch (err) {
        this.#opts.onWatchError?.(dir, err as Error);
      }
    }
  }

  /** Stops watching. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#quiet);
    clearInterval(this.#poll);
    for (const w of this.#dirs.values()) w.close();
    this.#dirs.clear();
  }

  /**
   * An event: a change of the watched files (re)starts the quiet period, another file's starts one
   * only when none is running (see the module comment). At its end, once the events already arrived
   * are read (a busy loop may run the timer before them), the contents are compared unless a change
   * of the watched files restarted it meanwhile.
   */
  #changed(): void {
    if (this.#closed) return;
    const signature = statSignature(this.#files);
    const own = signature !== this.#eventSignature;
    this.#eventSignature = signature;
    if (!own && this.#pending) return;
    const arm = ++this.#arms;
    this.#pending = true;
    clearTimeout(this.#quiet);
    this.#quiet = setTimeout(afterPendingIo, this.#opts.quietMs, this.#settleBound, arm);
  }

  /** {@link #settle} bound once, so an event allocates no closures (`afterPendingIo` passes `arm`). */
  readonly #settleBound = (arm: number): void => this.#settle(arm);

  /** Quiet period `arm` ended: a later change restarted it, or the contents are compared. */
  #settle(arm: number): void {
    if (this.#closed || arm !== this.#arms) return;
    this.#pending = false;
    this.#signature = statSignature(this.#files);
    const hash = contentHash(this.#files);
    if (hash === this.#hash) return;
    this.#hash = hash;
    this.#opts.onChange();
  }
}
