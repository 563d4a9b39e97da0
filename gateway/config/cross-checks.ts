/**
 * Every cross-field check of the configuration, in one place: the problems no single key's schema
 * can see (a route naming an unknown upstream, an unknown plan or class, endpoints of mixed schemes
 * or listed twice, more than one worker without Redis). They run on the raw document, whatever
 * the schema thought of it, so `gateway check` lists them beside the shape errors of every section
 * in one run, each once (SPEC §7; zod's refinements are skipped once a value inside was refused,
 * which is why they do not live in the schema).
 */
import { authSourceProblem } from "./auth-schema.js";
import { listenerProblems } from "./decision-schema.js";
import { at, list, mapping, names, text, type CrossProblem } from "./loose.js";
import { redisProblems } from "./rate-limits-schema.js";
import { windowProblem } from "./windows-schema.js";
import { rateLimitProblems } from "./rate-limits-references.js";
import { sheddingProblems } from "./shedding-schema.js";
import { upstreamProblems } from "./upstream-schema.js";
import { workersWithoutRedis } from "./workers-schema.js";

/**
 * @param doc - the interpolated document, as written (before defaults)
 * @returns every cross-field problem, its path from the top of the document
 */
export function crossFieldProblems(doc: unknown): CrossProblem[] {
  const out: CrossProblem[] = [];
  const workers = at(doc, "workers");
  const many = workers === "auto" || (Number.isInteger(workers) && (workers as number) > 1);
  const redis = mapping(at(doc, "rate_limits", "store", "redis")) !== undefined;
  const shared = many ? workersWithoutRedis(workers as number | "auto", redis) : null;
  if (shared !== null) out.push({ path: ["workers"], message: shared });
  const upstreams = mapping(at(doc, "upstreams"));
  for (const name of names(upstreams)) {
    for (const p of upstreamProblems(upstreams?.[name])) {
      out.push({ path: ["upstreams", name, ...p.path], message: p.message });
    }
  }
  out.push(...sheddingProblems(doc));
  if (upstreams !== undefined) {
    const known = names(upstreams);
    list(at(doc, "routes"))?.forEach((route, i) => {
      const upstream = text(mapping(route)?.upstream);
      if (upstream === undefined || upstream === "" || known.includes(upstream)) return;
      out.push({
        path: ["routes", i, "upstream"],
        message: `unknown upstream "${upstream}" (known: ${known.join(", ")})`,
      });
    });
  }
  out.push(...rateLimitProblems(doc), ...objectProblems(doc), ...listenersOf(doc));
  return out;
}

/** The listeners' combination (SPEC §23), with the schema's default ports where none is written. */
function listenersOf(doc: unknown): CrossProblem[] {
  const portOr = (v: unknown, fallback: number): number => (Number.isInteger(v) ? (v as number) : fallback);
  const decision = mapping(at(doc, "decision"));
  return listenerProblems(
    { enabled: at(doc, "listen", "enabled") !== false, port: portOr(at(doc, "listen", "port"), 8080) },
    portOr(at(doc, "admin", "port"), 9090),
    decision === undefined ? undefined : { listen: { port: portOr(at(decision, "listen", "port"), 8081) } },
  );
}

/**
 * The checks of single objects (a window's `window_s` or `period`, Redis's kind, `auth`'s source),
 * which the schema also runs but skips once a value inside the object was refused.
 */
function objectProblems(doc: unknown): CrossProblem[] {
  const out: CrossProblem[] = [];
  const windows = (path: (string | number)[], value: unknown): void => {
    list(value)?.forEach((w, i) => {
      const m = mapping(w);
      const message = m === undefined ? undefined : windowProblem(m);
      if (message !== undefined) out.push({ path: [...path, i], message });
    });
  };
  const rl = at(doc, "rate_limits");
  for (const c of names(at(rl, "classes")))
    windows(["rate_limits", "classes", c, "windows"], at(rl, "classes", c, "windows"));
  windows(["rate_limits", "anonymous", "windows"], at(rl, "anonymous", "windows"));
  for (const p of names(at(rl, "plans"))) {
    for (const c of names(at(rl, "plans", p))) windows(["rate_limits", "plans", p, c], at(rl, "plans", p, c));
  }
  windows(["auth", "guard", "windows"], at(doc, "auth", "guard", "windows"));
  const redis = mapping(at(rl, "store", "redis"));
  for (const p of redis === undefined ? [] : redisProblems(redis)) {
    out.push({ path: ["rate_limits", "store", "redis", ...p.path], message: p.message });
  }
  const auth = mapping(at(doc, "auth"));
  const source = auth === undefined ? undefined : authSourceProblem(auth);
  if (source !== undefined) out.push({ path: ["auth"], message: source });
  return out;
}
