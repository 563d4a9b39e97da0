/**
 * Keeps a {@link FileWatcher} in step with the configuration in force (SPEC §20): on while
 * `reload.watch` is true, over the configuration file and the files the configuration names, with
 * the contents now on disk as the baseline after every reload (applied or rejected, so a rejected
 * file is not retried until it changes again).
 */
import path from "node:path";
import type { Logger } from "pino";
import { namedFiles } from "./named-files.js";
import type { GatewayConfig } from "./schema.js";
import { FileWatcher } from "./watch.js";

/** Follows one configuration file for a gateway or a cluster primary. */
export class ConfigFollower {
  readonly #file: string;
  readonly #logger: Logger;
  readonly #reload: () => void;
  #watcher: FileWatcher | undefined;

  /**
   * @param file - the configuration file
   * @param reload - asks for a reload (the SIGHUP path); the caller calls {@link update} after it
   */
  constructor(file: string, logger: Logger, reload: () => void) {
    this.#file = path.resolve(file);
    this.#logger = logger;
    this.#reload = reload;
  }

  /** Starts, stops or re-aims the watch for the configuration now in force. */
  update(config: GatewayConfig, baseDir: string): void {
    if (!config.reload.watch) {
      this.close();
      return;
    }
    const files = [this.#file, ...namedFiles(config, baseDir)];
    if (this.#watcher !== undefined) {
      this.#watcher.setFiles(files);
      return;
    }
    this.#watcher = new FileWatcher(files, {
      onChange: this.#reload,
      onWatchError: (dir, err) =>
        this.#logger.warn({ dir, err: { message: err.message } }, "cannot watch a directory; polling it"),
    });
    this.#logger.info({ files }, "watching the configuration and the files it names (reload.watch)");
  }

  /** Stops watching. */
  close(): void {
    this.#watcher?.close();
    this.#watcher = undefined;
  }
}
