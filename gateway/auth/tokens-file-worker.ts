/**
 * Worker thread entry of {@link loadStaticTokens} for a large tokens file: parses and validates it
 * here, so the parse's transient memory (the YAML document, its source ranges, the validated copy)
 * lives and dies in this thread's heap, which is returned to the operating system when the thread
 * exits. Posts `{ entries }` or `{ error }` on `workerData.port`, then wakes the waiting caller.
 */
import { workerData, type MessagePort } from "node:worker_threads";
import { parseStaticTokens, TokensFileError } from "./tokens-file.js";

/** What the loader hands this thread. */
interface TokensFileJob {
  file: string;
  claimNames: string[];
  valueClaims: string[];
  port: MessagePort;
  /** Set to 1 (and notified) once the answer is posted. */
  done: Int32Array;
}

const job = workerData as TokensFileJob;
try {
  job.port.postMessage({ entries: [...parseStaticTokens(job.file, job.claimNames, job.valueClaims)] });
} catch (err) {
  job.port.postMessage({
    error:
      err instanceof TokensFileError
        ? { problems: err.problems, unreadable: err.unreadable }
        : { problems: [{ message: err instanceof Error ? err.message : String(err) }], unreadable: false },
  });
} finally {
  Atomics.store(job.done, 0, 1);
  Atomics.notify(job.done, 0);
}
