/**
 * Loading the configuration: YAML → `${ENV}` interpolation → schema → deep freeze.
 * Every problem is collected and reported at once, each with its key path, its YAML line and
 * column when known, and the value received.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { LineCounter, parseDocument, isNode } from "yaml";
import type { z } from "zod";
import { gatewayConfigSchema, type GatewayConfig } from "./schema.js";

/** One configuration problem. `path` is the dotted key path (`routes[0].upstream`). */
export interface ConfigProblem {
  path: string;
  message: string;
  /** 1-based line and column in the YAML file, when the key exists there. */
  line?: number;
  col?: number;
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
}

/** Formats a zod/YAML key path as `a.b[0].c`. */
export function formatPath(segments: readonly PropertyKey[]): string {
  let out = "";
  for (const s of segments) {
    if (typeof s === "number") out += `[${s}]`;
    else out += out === "" ? String(s) : `.${String(s)}`;
  }
  return out;
}

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

function interpolate(
  value: unknown,
  env: NodeJS.ProcessEnv,
  at: PropertyKey[],
  problems: ConfigProblem[],
): unknown {
  if (typeof value === "string") {
    return value.replace(ENV_REF, (_m, name: string, fallback: string | undefined) => {
      const v = env[name];
      if (v !== undefined) return v;
      if (fallback !== undefined) return fallback;
      problems.push({ path: formatPath(at), message: `environment variable ${name} is not set` });
      return "";
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, env, [...at, i], problems));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = interpolate(v, env, [...at, k], problems);
    return out;
  }
  return value;
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

/**
 * Parses and validates YAML text.
 * @param text - the YAML document
 * @param source - file name for messages
 * @param env - environment for `${VAR}` / `${VAR:-default}` interpolation
 * @returns the frozen configuration
 * @throws ConfigError listing every problem
 */
export function parseConfig(
  text: string,
  source = "<inline>",
  env: NodeJS.ProcessEnv = process.env,
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
  const problems: ConfigProblem[] = [];
  const raw = interpolate(doc.toJS(), env, [], problems);
  const result = gatewayConfigSchema.safeParse(raw ?? {});
  if (!result.success) {
    // A missing ${VAR} already explains the empty value the schema then rejects.
    const envPaths = new Set(problems.map((p) => p.path));
    for (const issue of result.error.issues) {
      const problem = toProblem(issue, raw);
      if (!envPaths.has(problem.path)) problems.push(problem);
    }
  }
  for (const p of problems) {
    const node = doc.getIn(p.path === "" ? [] : pathSegments(p.path), true);
    const range = isNode(node) ? node.range : undefined;
    if (range) {
      const pos = lineCounter.linePos(range[0]);
      p.line = pos.line;
      p.col = pos.col;
    }
  }
  if (problems.length > 0 || !result.success) throw new ConfigError(source, problems);
  return deepFreeze(result.data);
}

function pathSegments(p: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const m of p.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) {
    if (m[2] !== undefined) out.push(Number(m[2]));
    else if (m[1] !== undefined) out.push(m[1]);
  }
  return out;
}

function valueAt(root: unknown, segments: readonly PropertyKey[]): unknown {
  let v = root;
  for (const s of segments) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[s];
  }
  return v;
}

function toProblem(issue: z.core.$ZodIssue, raw: unknown): ConfigProblem {
  const segments = issue.path;
  if (issue.code === "unrecognized_keys") {
    return {
      path: formatPath(segments),
      message: `unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `"${k}"`).join(", ")}`,
    };
  }
  if (issue.code === "invalid_key") {
    // A record key the key schema refused (a class or plan name): say what a name must be.
    const key = segments[segments.length - 1];
    return {
      path: formatPath(segments),
      message: `${issue.issues.map((i) => i.message).join("; ")}, received ${describeValue(String(key))}`,
    };
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
  return { path: formatPath(segments), message };
}

/**
 * Reads, interpolates and validates a configuration file.
 * @param file - path to the YAML file
 * @throws ConfigError (bad content) or a Node `ENOENT`-style error when the file cannot be read
 */
export function loadConfig(file: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new ConfigError(file, [{ path: "", message: `cannot read file: ${(err as Error).message}` }]);
  }
  return { config: parseConfig(text, file, env), baseDir: path.dirname(path.resolve(file)) };
}
