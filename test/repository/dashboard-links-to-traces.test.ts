/**
 * The dashboard's request panels link to traces. Every panel that queries the
 * request counter or the request-duration histogram links to the trace of an access line's
 * `traceId` (the `trace_id` variable) in the `DS_TEMPO` data source, and its trace searches use
 * only attributes the gateway's SERVER spans carry. (Exemplars are not used: see the README,
 * "Tracing".)
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

interface Link {
  title: string;
  url: string;
}
interface Panel {
  id: number;
  title: string;
  type: string;
  targets?: { expr: string }[];
  links?: Link[];
  fieldConfig?: { defaults?: { links?: Link[] } };
}
interface Dashboard {
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: unknown }[] };
}

const dashboard = JSON.parse(
  readFileSync(new URL("../../config/monitoring/grafana-dashboard.json", import.meta.url), "utf8"),
) as Dashboard;

/** The Explore pane a link opens: data source and TraceQL query. */
function pane(url: string): { datasource: string; query: string } {
  const panes = new URL(url, "http://grafana.invalid").searchParams.get("panes");
  const parsed = JSON.parse(panes!) as Record<string, { datasource: string; queries: { query: string }[] }>;
  const [only] = Object.values(parsed);
  return { datasource: only!.datasource, query: only!.queries[0]!.query };
}

const requestPanels = dashboard.panels.filter((p) =>
  (p.targets ?? []).some((t) => /gateway_request(s_total|_duration_seconds)/.test(t.expr)),
);

/** Attributes the gateway sets on SERVER spans (observability/tracing/observer.ts), as TraceQL names them. */
const SERVER_ATTRIBUTES = new Set([
  "span.http.response.status_code",
  "span.http.route",
  "span.gateway.ratelimit.class",
  "resource.service.name",
]);

describe("the dashboard links request panels to traces", () => {
  it("has the Tempo data source and the trace_id and service variables", () => {
    const vars = new Map(dashboard.templating.list.map((v) => [v.name, v]));
    expect(vars.get("DS_TEMPO")).toMatchObject({ type: "datasource", query: "tempo" });
    expect(vars.get("trace_id")).toMatchObject({ type: "textbox" });
    expect(vars.get("service")).toMatchObject({ type: "textbox", query: "gateway" });
  });

  it.each(requestPanels.map((p) => [p.title, p] as const))("%s opens the trace of a traceId", (_t, panel) => {
    const byId = (panel.links ?? []).map((l) => pane(l.url)).find((p) => p.query === "${trace_id}");
    expect(byId).toEqual({ datasource: "${DS_TEMPO}", query: "${trace_id}" });
  });

  it("searches traces only by attributes the SERVER span carries", () => {
    const links = requestPanels.flatMap((p) => [
      ...(p.links ?? []),
      ...(p.fieldConfig?.defaults?.links ?? []),
    ]);
    const searches = links.map((l) => pane(l.url).query).filter((q) => q !== "${trace_id}");
    expect(searches.length).toBeGreaterThanOrEqual(requestPanels.length);
    for (const q of searches) {
      expect(q).toMatch(/^\{resource\.service\.name="\$\{service\}" && kind=server/);
      for (const [name] of q.matchAll(/\b(?:span|resource)\.[a-z_.]+[a-z_]/g))
        expect(SERVER_ATTRIBUTES).toContain(name);
    }
  });
});
