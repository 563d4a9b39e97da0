/** Limit-class selection: the first class whose `match` holds (SPEC §7). Built once per configuration. */
import type { GatewayConfig } from "../config/schema.js";
import { compilePathPattern } from "./patterns.js";

interface CompiledMatcher {
  name: string;
  methods: ReadonlySet<string> | null;
  paths: readonly RegExp[] | null;
}

/** Maps (method, normalised path) to a limit-class name. */
export class Classifier {
  private readonly matchers: readonly CompiledMatcher[];
  /** Class used when no `match` holds (`rate_limits.default_class`, else the last class). */
  readonly defaultClass: string;

  constructor(config: Pick<GatewayConfig, "rate_limits">) {
    const entries = Object.entries(config.rate_limits.classes);
    this.matchers = entries.map(([name, c]) => ({
      name,
      methods: c.match.methods ? new Set(c.match.methods) : null,
      paths: c.match.paths ? c.match.paths.map(compilePathPattern) : null,
    }));
    this.defaultClass = config.rate_limits.default_class ?? entries[entries.length - 1]![0];
  }

  /** @param method - upper-case HTTP method; @param path - normalised path */
  classify(method: string, path: string): string {
    for (const m of this.matchers) {
      if (m.methods !== null && !m.methods.has(method)) continue;
      if (m.paths !== null && !anyMatches(m.paths, path)) continue;
      return m.name;
    }
    return this.defaultClass;
  }
}

/** `patterns.some(re => re.test(path))` without a closure per call (hot path). */
function anyMatches(patterns: readonly RegExp[], path: string): boolean {
  for (const re of patterns) if (re.test(path)) return true;
  return false;
}
