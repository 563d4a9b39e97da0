/**
 * Loading the configuration: YAML → `${ENV}` interpolation → schema → deep freeze.
 * Every problem is collected and reported at once, each with its key path, its YAML line and
 * column when known, and the value received.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { LineCounter, parseDocument, isMap, isNode, isScalar, type Document } from "yaml";
import type { z } from "zod";
import type { ConfigFinding } from "./finding.js";
import { closestKey, knownKeysAt } from "./key-paths.js";
import { configHash } from "./named-files.js";
import { interpolate, withLogLevel, type UnsetReference } from "./interpolate.js";
import { configIssueMessage } from "./issue-messages.js";
import type { ReceivedOverride } from "./primitives.js";
import { gatewayConfigSchema, type GatewayConfig } from "./schema.js";
import { crossFieldProblems } from "./cross-checks.js";
import { validSections } from "./sections.js";

/**
 * One configuration problem. `path` is the key path as printed (`routes[0].upstream`; a key that
 * contains a dot is quoted: `upstreams["docs.v2"].url`).
 */
export interface ConfigProblem {
  path: string;
  message: string;
  /** 1-based line and column in the YAML file, when the key exists there. */
  line?: number;
  col?: number;
}

export type { ConfigFinding } from "./finding.js";

/** A problem while it is collected: its segments find its YAML position. */
interface Found extends ConfigProblem {
  segments: readonly PropertyKey[];
  /** Point at the last segment's key itself (an unknown key) rather than at its value. */
  atKey?: boolean;
}

/** Thrown by {@link loadConfig} and {@link parseConfig}; `problems` lists every issue found. */
export class ConfigError extends Error {
  readonly problems: readonly ConfigProblem[];
  constructor(source: string, problems: ConfigProblem[]) {
    super(
      `invalid configuration ${source}:\n` +
        problems
          .map(
            (p) => `  ${p.path || "(root)"}: ${p.message}${p.line ? ` (line ${p.line}, col ${p.col})` : ""}`,
          )
          .join("\n"),
    );
    this.name = "ConfigError";
    this.problems = problems;
  }
}

/** A loaded configuration plus where it came from (relative paths resolve against `baseDir`). */
export interface LoadedConfig {
  config: GatewayConfig;
  baseDir: string;
  /** {@link configHash} of it, computed when loaded from its file (SPEC §20). */
  hash?: string;
}

const PLAIN_KEY = /^[A-Za-z0-9_-]+$/;

/**
 * Formats a zod/YAML key path as `a.b[0].c`; a key that is not a plain name (`docs.v2`, `my key`)
 * is quoted, `upstreams["docs.v2"].url`, so the printed path names one place.
 */
export function formatPath(segments: readonly PropertyKey[]): string {
  let out = "";
  for (const s of segments) {
    if (typeof s === "number") out += `[${s}]`;
    else if (!PLAIN_KEY.test(String(s))) out += `[${JSON.stringify(String(s))}]`;
    else out += out === "" ? String(s) : `.${String(s)}`;
  }
  return out;
}

function describeValue(input: unknown): string {
  if (input === undefined) return "nothing";
  const s = JSON.stringify(input);
  return s === undefined ? String(input) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** Deep-freezes plain data in place and returns it. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** Options of {@link parseConfig} and {@link loadConfig}. */
export interface ParseOptions {
  /**
   * `warn`: an unset `${ENV}` reference is a warning and its text stays as the value, which the
   * schema still judges (`gateway check` without `--strict`: the example's secrets are placeholders
   * of the deployment). @default "error"
   */
  unsetEnv?: "error" | "warn";
  /** Receives the warnings, with their positions. */
  warnings?: ConfigProblem[];
}

/**
 * Parses and validates YAML text. Every problem is reported in one pass: the schema's, the
 * cross-references' (`cross-checks.ts`, on the raw document, whatever the schema found), and those
 * of `check` on the sections that are valid by themselves.
 * @param text - the YAML document
 * @param source - file name for messages
 * @param env - environment for `${VAR}` / `${VAR:-default}` interpolation and `LOG_LEVEL`
 * @param check - further checks of a configuration the schema accepted (files it names); their
 *   findings are reported like the schema's problems, at their YAML positions
 * @returns the frozen configuration
 * @throws ConfigError listing every problem
 */
export function parseConfig(
  text: string,
  source = "<inline>",
  env: NodeJS.ProcessEnv = process.env,
  check?: (config: GatewayConfig) => ConfigFinding[],
  options: ParseOptions = {},
): GatewayConfig {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      source,
      doc.errors.map((e) => {
        const pos = e.linePos?.[0];
        return {
          path: "",
          message: `YAML: ${e.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "")}`,
          line: pos?.line,
          col: pos?.col,
        };
      }),
    );
  }
  const warnOnly = options.unsetEnv === "warn";
  const unset: UnsetReference[] = [];
  const raw = withLogLevel(interpolate(doc.toJS(), env, [], unset, warnOnly), env.LOG_LEVEL);
  const envFound: Found[] = unset.map((u) => ({
    path: formatPath(u.segments),
    segments: u.segments,
    message: `environment variable ${u.name} is not set`,
  }));
  const problems: Found[] = warnOnly ? [] : envFound;
  const result = gatewayConfigSchema.safeParse(raw ?? {}, { error: configIssueMessage });
  // A missing ${VAR} already explains the empty value the schema then rejects.
  const envPaths = new Set(problems.map((p) => p.path));
  const seen = new Set<string>();
  const crossIssues = crossFieldProblems(raw).map(
    (p): z.core.$ZodIssue => ({
      code: "custom",
      path: p.path,
      message: p.message,
      input: undefined,
      ...(p.atKey && { params: { atKey: true } }),
    }),
  );
  for (const issue of [...(result.success ? [] : result.error.issues), ...crossIssues]) {
    for (const problem of toProblems(issue, raw)) {
      const key = `${problem.path}\0${problem.message}`;
      if (envPaths.has(problem.path) || seen.has(key)) continue;
      seen.add(key);
      problems.push(problem);
    }
  }
  if (check !== undefined) {
    const reported = new Set(problems.map((p) => p.path));
    for (const f of check(result.success ? result.data : validSections(raw))) {
      const path = formatPath(f.segments);
      if (!reported.has(path)) problems.push({ ...f, path });
    }
  }
  for (const p of problems) {
    if (p.path === "log.level" && env.LOG_LEVEL) p.message += " (from the LOG_LEVEL environment variable)";
  }
  for (const p of [...problems, ...(warnOnly ? envFound : [])]) {
    const offset = positionOf(doc, p.segments, p.atKey === true);
    if (offset !== undefined) {
      const pos = lineCounter.linePos(offset);
      p.line = pos.line;
      p.col = pos.col;
    }
  }
  if (problems.length > 0 || !result.success) throw new ConfigError(source, problems.map(plain));
  if (warnOnly) options.warnings?.push(...envFound.map(plain));
  return deepFreeze(result.data);
}

/** A problem as reported: without the segments that found its position. */
function plain({ path, message, line, col }: Found): ConfigProblem {
  return line === undefined ? { path, message } : { path, message, line, col };
}

/** Offset in the text of the node at `segments` (with `atKey`, of the last segment's key). */
function positionOf(doc: Document, segments: readonly PropertyKey[], atKey: boolean): number | undefined {
  if (!atKey) {
    const node = doc.getIn(segments, true);
    return isNode(node) ? node.range?.[0] : undefined;
  }
  const parent = segments.length === 1 ? doc.contents : doc.getIn(segments.slice(0, -1), true);
  if (!isMap(parent)) return undefined;
  const last = segments[segments.length - 1];
  const pair = parent.items.find((p) => (isScalar(p.key) ? p.key.value : p.key) === last);
  return isNode(pair?.key) ? pair.key.range?.[0] : undefined;
}

function valueAt(root: unknown, segments: readonly PropertyKey[]): unknown {
  let v = root;
  for (const s of segments) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[s];
  }
  return v;
}

function toProblems(issue: z.core.$ZodIssue, raw: unknown): Found[] {
  const segments = issue.path;
  const path = formatPath(segments);
  if (issue.code === "unrecognized_keys") {
    const known = knownKeysAt(gatewayConfigSchema, segments) ?? [];
    return issue.keys.map((key) => {
      const guess = closestKey(key, known);
      const hint = guess !== undefined ? ` (did you mean "${guess}"?)` : ` (known: ${known.join(", ")})`;
      return { path, segments: [...segments, key], atKey: true, message: `unknown key "${key}"${hint}` };
    });
  }
  if (issue.code === "invalid_key") {
    // A record key the key schema refused (a class or plan name): say what a name must be.
    const key = segments[segments.length - 1];
    return [
      {
        path,
        segments,
        message: `${issue.issues.map((i) => i.message).join("; ")}, received ${describeValue(String(key))}`,
      },
    ];
  }
  const params =
    issue.code === "custom"
      ? (issue.params as Partial<ReceivedOverride & { atKey: true }> | undefined)
      : undefined;
  // A key that is itself the problem quotes no value; a masked value replaces what was received.
  if (params?.atKey) return [{ path, segments, atKey: true, message: issue.message }];
  if (params?.received !== undefined) {
    return [{ path, segments, message: `${issue.message}, received ${describeValue(params.received)}` }];
  }
  const received = valueAt(raw, segments);
  const message =
    received === undefined
      ? issue.code === "invalid_type"
        ? "required"
        : issue.message
      : issue.code === "custom" && typeof received === "object"
        ? issue.message
        : `${issue.message}, received ${describeValue(received)}`;
  return [{ path, segments, message }];
}

/**
 * Reads, interpolates and validates a configuration file.
 * @param file - path to the YAML file
 * @param options.checkFiles - also validate the files it names (the static tokens file, TLS files)
 *   with this check (`server/config-files.ts`), as `gateway check` does (SPEC §9); `start` loads
 *   them when it builds its runtime
 * @param options.unsetEnv, options.warnings - see {@link ParseOptions}
 * @throws ConfigError (bad content, or the file cannot be read)
 */
export function loadConfig(
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  options: { checkFiles?: (config: GatewayConfig, baseDir: string) => ConfigFinding[] } & ParseOptions = {},
): LoadedConfig {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new ConfigError(file, [{ path: "", message: `cannot read file: ${(err as Error).message}` }]);
  }
  const baseDir = path.dirname(path.resolve(file));
  const files = options.checkFiles;
  const check = files === undefined ? undefined : (c: GatewayConfig) => files(c, baseDir);
  const config = parseConfig(text, file, env, check, options);
  return { config, baseDir, hash: configHash(config, baseDir) };
}
