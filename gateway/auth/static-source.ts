/**
 * Static introspection source (SPEC §5, `auth.static.tokens_file`): a YAML mapping of token, or
 * `sha256:<hex>` of the token, to the RFC 7662 fields the gateway uses. For development, tests and
 * the demo. Tokens are looked up by their SHA-256, so plaintext and hashed entries both work and
 * the file may hold only hashes.
 */
import { statSync } from "node:fs";
import path from "node:path";
import { MessageChannel, receiveMessageOnPort, Worker } from "node:worker_threads";
import { parseStaticTokens, TokensFileError, type TokensFileProblem } from "./tokens-file.js";
import { hashToken, INACTIVE, type TokenInfo } from "../base/token-info.js";
import type { IntrospectionSource } from "./introspection-source.js";

/** Files at least this large are parsed in a worker thread (bytes; about 4,000 entries). */
const WORKER_MIN_BYTES = 256 * 1024;
/** Longest wait for the worker's answer before parsing in this thread instead (ms). */
const WORKER_TIMEOUT_MS = 120_000;

/**
 * The last file parsed and its tokens: a start or a reload checks the file
 * (`server/config-files.ts`) and then loads it, and should parse it once. Held weakly: the running
 * configuration's source holds the map; once no configuration uses the file, it can be collected.
 */
let lastLoad: { key: string; tokens: WeakRef<ReadonlyMap<string, TokenInfo>> } | undefined;

/**
 * Reads and validates a tokens file. A large one is parsed in a worker thread while this one waits
 * (issue 17 item 5): parsing 10k entries allocates about 50 MB that would otherwise stay in this
 * heap, as resident memory, until a full collection long after; the worker's heap is returned when
 * it exits. Small files are parsed here. Loading the file just loaded, unchanged (same inode, size,
 * modification and change times, to the nanosecond) and with the same `claimNames`, returns the
 * same map without parsing again.
 * @param file - path of the YAML file
 * @param claimNames - extra fields an entry may carry, kept in {@link TokenInfo.claims} (the
 *   `rate_limits.plan_claim` name when configured, and the budgets' claims)
 * @param valueClaims - those of `claimNames` whose value is a string or a number (the budgets'
 *   claims, SPEC §22); the others are strings
 * @returns token SHA-256 hex (lower case) → frozen {@link TokenInfo}
 * @throws TokensFileError naming the file and every bad entry and field (`tokens.yaml: "dev-…".scope:
 *   ...`), when the file cannot be read, is not YAML, does not match the shape, or lists a token twice
 */
export function loadStaticTokens(
  file: string,
  claimNames: readonly string[] = [],
  valueClaims: readonly string[] = [],
): ReadonlyMap<string, TokenInfo> {
  let size = 0n;
  let key: string | undefined;
  try {
    const st = statSync(file, { bigint: true });
    size = st.size;
    key = [
      path.resolve(file),
      st.dev,
      st.ino,
      st.size,
      st.mtimeNs,
      st.ctimeNs,
      ...claimNames,
      "",
      ...valueClaims,
    ].join("\0");
  } catch {
    // Unreadable: parseStaticTokens says why.
  }
  const known = key !== undefined && lastLoad?.key === key ? lastLoad.tokens.deref() : undefined;
  if (known !== undefined) return known;
  const parsed = size >= WORKER_MIN_BYTES ? parseInWorker(file, claimNames, valueClaims) : null;
  const tokens = parsed ?? parseStaticTokens(file, claimNames, valueClaims);
  if (key !== undefined) lastLoad = { key, tokens: new WeakRef(tokens) };
  return tokens;
}

/**
 * The worker's bootstrap: imports the entry, and if that fails says so and wakes the caller, which
 * would otherwise wait out the timeout. Under a TypeScript test runner the entry is the .ts source,
 * imported through tsx (a worker does not inherit the runner's loader).
 */
const BOOT_WITH = (load: string): string => `
const { workerData } = require("node:worker_threads");
${load}.catch((err) => {
  workerData.port.postMessage({ crashed: String((err && err.message) || err) });
  Atomics.store(workerData.done, 0, 1);
  Atomics.notify(workerData.done, 0);
});`;
const BOOT = BOOT_WITH("import(workerData.entry)");
const BOOT_TS = BOOT_WITH(
  'import("tsx/esm/api").then((tsx) => tsx.tsImport(workerData.entry, workerData.parent))',
);

/** What the worker thread posts back. */
type WorkerAnswer =
  | { entries: [string, TokenInfo][] }
  /** The entry module could not be loaded: nothing was parsed. */
  | { crashed: string }
  | { error: { problems: TokensFileProblem[]; unreadable: boolean } };

/**
 * {@link parseStaticTokens} in a worker thread, waited for synchronously (`Atomics.wait`).
 * @returns the tokens, or null when the worker gave no answer (then the caller parses here)
 * @throws TokensFileError as the worker found it
 */
export function parseInWorker(
  file: string,
  claimNames: readonly string[],
  valueClaims: readonly string[] = [],
): Map<string, TokenInfo> | null {
  const done = new Int32Array(new SharedArrayBuffer(4));
  const { port1, port2 } = new MessageChannel();
  const ts = import.meta.url.endsWith(".ts");
  const entry = new URL(`./tokens-file-worker.${ts ? "ts" : "js"}`, import.meta.url).href;
  let worker: Worker;
  try {
    worker = new Worker(ts ? BOOT_TS : BOOT, {
      eval: true,
      workerData: {
        file,
        claimNames: [...claimNames],
        valueClaims: [...valueClaims],
        port: port2,
        done,
        entry,
        parent: import.meta.url,
      },
      transferList: [port2],
    });
  } catch {
    return null;
  }
  try {
    Atomics.wait(done, 0, 0, WORKER_TIMEOUT_MS);
    const answer = receiveMessageOnPort(port1)?.message as WorkerAnswer | undefined;
    if (answer === undefined || "crashed" in answer) return null;
    if ("error" in answer) throw new TokensFileError(file, answer.error.problems, answer.error.unreadable);
    // Structured cloning drops the freeze and the claims' null prototype: both restored.
    for (const [, info] of answer.entries) {
      Object.freeze(info.scope);
      if (info.claims !== undefined)
        info.claims = Object.freeze(Object.assign(Object.create(null), info.claims));
      Object.freeze(info);
    }
    return new Map(answer.entries);
  } finally {
    port1.close();
    void worker.terminate();
  }
}

/**
 * An {@link IntrospectionSource} answering from a tokens file, read once at construction.
 * `exp` is reported as written; the token cache treats an active answer past `exp` as inactive.
 *
 * @example
 * // tokens.yaml:  dev-token: { sub: alice, scope: "read write", plan: pro }   (plan_claim: plan)
 * const source = new StaticTokenSource("tokens.yaml", configDir);
 */
export class StaticTokenSource implements IntrospectionSource {
  readonly kind = "static";
  readonly #tokens: ReadonlyMap<string, TokenInfo>;

  /**
   * @param tokensFile - the YAML file, absolute or relative to `baseDir`
   * @param baseDir - directory of the configuration file
   * @param claimNames - extra fields an entry may carry (see {@link loadStaticTokens})
   * @param valueClaims - those of them that may be numbers (see {@link loadStaticTokens})
   * @throws TokensFileError from {@link loadStaticTokens}
   */
  constructor(
    tokensFile: string,
    baseDir: string = process.cwd(),
    claimNames: readonly string[] = [],
    valueClaims: readonly string[] = [],
  ) {
    this.#tokens = loadStaticTokens(path.resolve(baseDir, tokensFile), claimNames, valueClaims);
  }

  /** @returns the entry for `token`; `{ active: false, scope: [] }` when it is not listed */
  async introspect(token: string): Promise<TokenInfo> {
    return this.#tokens.get(hashToken(token)) ?? INACTIVE;
  }
}
