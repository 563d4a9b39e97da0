/**
 * A small parser for the Prometheus text exposition format (0.0.4) as prom-client writes it, and
 * a scrape of a gateway's admin `/metrics`. Samples are looked up by name and labels, so tests
 * compare counts with what they sent rather than grepping text.
 */
import { request } from "./http.js";

/** One sample line: `name{label="value",...} value`. */
export interface Sample {
  name: string;
  labels: Readonly<Record<string, string>>;
  value: number;
}

/** A parsed exposition. */
export interface Scrape {
  /** Every sample line, in order. */
  readonly samples: readonly Sample[];
  /** Family name → type, from `# TYPE` lines. */
  readonly types: ReadonlyMap<string, string>;
  /**
   * The value of the one sample of `name` whose labels are exactly `labels`, or 0 when there is
   * none (an unlabelled child that was never touched is not exported).
   * @throws Error when `labels` selects more than one sample (it cannot: labels are exact)
   */
  value(name: string, labels?: Record<string, string>): number;
  /** Sum over the samples of `name` whose labels include `match` (a subset). */
  sum(name: string, match?: Record<string, string>): number;
  /** The samples of `name` whose labels include `match`. */
  select(name: string, match?: Record<string, string>): Sample[];
}

const ESCAPES: Readonly<Record<string, string>> = { "\\": "\\", '"': '"', n: "\n" };

/** Parses `{a="x",b="y\"z"}` starting at `text[i] === "{"`; returns the labels and the index after `}`. */
function parseLabels(text: string, start: number): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = start + 1;
  for (;;) {
    while (text[i] === "," || text[i] === " ") i++;
    if (text[i] === "}") return { labels, end: i + 1 };
    const eq = text.indexOf("=", i);
    if (eq === -1 || text[eq + 1] !== '"') throw new Error(`bad label at ${i}: ${text}`);
    const name = text.slice(i, eq).trim();
    let value = "";
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === "\\") {
        const next = text[j + 1] ?? "";
        value += ESCAPES[next] ?? `\\${next}`;
        j++;
      } else {
        value += text[j];
      }
    }
    if (j >= text.length) throw new Error(`unterminated label value: ${text}`);
    labels[name] = value;
    i = j + 1;
  }
}

/** Go's ParseFloat, which Prometheus uses, takes `NaN` and `Inf` in any case; prom-client writes `Nan`. */
function parseValue(raw: string): number {
  const lower = raw.toLowerCase();
  if (lower === "+inf" || lower === "inf") return Infinity;
  if (lower === "-inf") return -Infinity;
  if (lower === "nan") return NaN;
  const n = Number(raw);
  if (Number.isNaN(n)) throw new Error(`bad sample value ${raw}`);
  return n;
}

function includes(labels: Readonly<Record<string, string>>, match: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(match)) if (labels[k] !== v) return false;
  return true;
}

/**
 * Parses Prometheus text format.
 * @throws Error on a line it cannot read, so a format change fails loudly
 */
export function parsePrometheusText(text: string): Scrape {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    if (line.startsWith("#")) {
      const m = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (m !== null) types.set(m[1]!, m[2]!);
      continue;
    }
    const brace = line.indexOf("{");
    const space = line.indexOf(" ");
    let name: string;
    let labels: Record<string, string> = {};
    let rest: string;
    if (brace !== -1 && (space === -1 || brace < space)) {
      name = line.slice(0, brace);
      const parsed = parseLabels(line, brace);
      labels = parsed.labels;
      rest = line.slice(parsed.end).trim();
    } else {
      name = line.slice(0, space);
      rest = line.slice(space + 1).trim();
    }
    // An optional timestamp may follow the value.
    samples.push({ name, labels, value: parseValue(rest.split(" ")[0]!) });
  }
  const select = (name: string, match: Record<string, string> = {}): Sample[] =>
    samples.filter((s) => s.name === name && includes(s.labels, match));
  return {
    samples,
    types,
    select,
    value(name, labels = {}) {
      const want = Object.keys(labels).length;
      const found = select(name, labels).filter((s) => Object.keys(s.labels).length === want);
      if (found.length > 1)
        throw new Error(`${name}${JSON.stringify(labels)} matches ${found.length} samples`);
      return found[0]?.value ?? 0;
    },
    sum(name, match = {}) {
      return select(name, match).reduce((acc, s) => acc + s.value, 0);
    },
  };
}

/**
 * GETs `<adminUrl>/metrics` and parses it.
 * @throws Error when the admin listener does not answer 200 with the Prometheus content type
 */
export async function scrape(adminUrl: string): Promise<Scrape> {
  const res = await request(`${adminUrl}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  if (!String(res.headers["content-type"]).startsWith("text/plain")) {
    throw new Error(`/metrics content type ${String(res.headers["content-type"])}`);
  }
  return parsePrometheusText(res.body);
}

/** `name{labels}` of a sample, labels sorted: a series identity for set comparisons. */
export function seriesKey(s: Sample): string {
  const labels = Object.entries(s.labels)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(",");
  return `${s.name}{${labels}}`;
}
