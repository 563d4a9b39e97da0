/**
 * SPEC §7, §18: a reload that is prepared and then aborted (a cluster reload another worker
 * refused) changes nothing live. Admission reads `load_shedding` from the runtime the call runs on,
 * and an upstream's limits change only when a reload commits, so the priorities, shares and
 * `max_in_flight` of the running configuration keep deciding; a committed reload's apply at once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { parseConfig } from "../../gateway/config/load.js";
import { admit, type UpstreamCall } from "../../gateway/proxy/upstream-call.js";
import { FIXTURES, startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";

let gw: TestGateway;

/** The configuration with `docs` limited to `maxInFlight` calls and the `free` plan at `priority`. */
function config(maxInFlight: number, priority: string): Record<string, unknown> {
  const base = testConfig("http://127.0.0.1:1");
  const rl = base.rate_limits as Record<string, unknown>;
  rl.plans = { gold: {}, free: {} };
  return {
    ...base,
    upstreams: { docs: { url: "http://127.0.0.1:1", timeout_ms: 1000, max_in_flight: maxInFlight } },
    load_shedding: { priorities: { free: priority }, shares: { sheddable: 0.5, default: 0.9, critical: 1 } },
  };
}

const loaded = (c: Record<string, unknown>) => ({
  config: parseConfig(stringify(c), "test"),
  baseDir: FIXTURES,
});

/** How many calls of the `free` plan the live configuration admits before it sheds one. */
function freeCallsAdmitted(): number {
  const rt = gw.gateway.runtime;
  const docs = rt.upstreams.get("docs")!;
  const calls: UpstreamCall[] = [];
  for (let call = admit(docs, "free", rt.shedding); call !== null; call = admit(docs, "free", rt.shedding)) {
    calls.push(call);
  }
  for (const call of calls) call.end();
  expect(docs.ledger.callsAdmitted).toBe(0);
  return calls.length;
}

beforeAll(async () => {
  gw = await startGateway(config(4, "sheddable"));
});

afterAll(async () => {
  await gw?.close();
});

describe("a reload prepared and then aborted", () => {
  it("leaves the live priorities, shares and max_in_flight deciding", () => {
    expect(freeCallsAdmitted()).toBe(2); // 0.5 × 4
    gw.gateway.prepare(loaded(config(10, "critical"))).abort();
    expect(gw.gateway.runtime.upstreams.get("docs")!.admission!.limit).toBe(4);
    expect(freeCallsAdmitted()).toBe(2);
  });

  it("while a committed one applies to the next admission", () => {
    gw.gateway.prepare(loaded(config(10, "critical"))).commit();
    expect(gw.gateway.runtime.upstreams.get("docs")!.admission!.limit).toBe(10);
    expect(freeCallsAdmitted()).toBe(10); // 1 × 10
  });
});
