/**
 * The pieces of `workers` (SPEC §15) that need no process: the primary's line relay (only whole
 * lines reach stdout, whatever chunks the workers' pipes deliver; a slow destination pauses the
 * pipes), the group's `/metrics` (counters and histograms summed, gauges one series per worker),
 * and a worker's access lines carrying its `pid` exactly where pino puts it.
 */
import { systemClock } from "../../gateway/base/clock.js";
import { EventEmitter } from "node:events";
import { PassThrough } from "node:stream";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { LineRelay } from "../../gateway/cluster/line-relay.js";
import type { MetricJson } from "../../gateway/cluster/messages.js";
import { combineMetrics } from "../../gateway/cluster/group-metrics.js";
import { AccessLog } from "../../gateway/observability/access-log.js";
import { createLogger } from "../../gateway/observability/logger.js";
import { createMetrics, createPrimaryMetrics } from "../../gateway/observability/metrics.js";
import type { Runtime } from "../../gateway/core/runtime.js";
import { Generation } from "../../gateway/core/generation.js";
import { RequestScope } from "../../gateway/core/scope.js";
import { parsePrometheusText } from "../helpers/prom.js";
import { prng } from "../helpers/prng.js";
import { finishedScope } from "../helpers/access-lines.js";

/** A destination that keeps each write and can pretend to be full. */
class Sink extends EventEmitter {
  readonly writes: string[] = [];
  full = false;
  write(chunk: string): boolean {
    this.writes.push(chunk);
    return !this.full;
  }
}

const tick = () => new Promise((r) => setImmediate(r));

describe("LineRelay", () => {
  it("writes only whole lines, each line in one write, whatever the chunks", async () => {
    const sink = new Sink();
    const relay = new LineRelay(sink);
    const sources = [new PassThrough(), new PassThrough(), new PassThrough()];
    for (const s of sources) relay.add(s);
    const random = prng(7);
    const expected: string[] = [];
    const pending = sources.map(() => Buffer.alloc(0));
    for (let i = 0; i < 600; i++) {
      const w = i % 3;
      const line = JSON.stringify({ worker: w, i, pad: "é".repeat(Math.floor(random() * 9000)) });
      expected.push(line);
      // Each source's bytes are cut at random places, splitting lines and UTF-8 sequences.
      const bytes = Buffer.concat([pending[w]!, Buffer.from(line + "\n")]);
      const cut = Math.floor(random() * bytes.length);
      sources[w]!.write(bytes.subarray(0, cut));
      pending[w] = bytes.subarray(cut);
      if (i % 50 === 0) await tick();
    }
    for (let w = 0; w < 3; w++) sources[w]!.end(pending[w]);
    await relay.drained(1000);
    for (const chunk of sink.writes) expect(chunk.endsWith("\n")).toBe(true);
    const lines = sink.writes
      .join("")
      .split("\n")
      .filter((l) => l !== "");
    expect(lines.sort()).toEqual([...expected].sort());
  });

  it("drops a last line cut short (a worker killed mid-write) instead of writing it broken", async () => {
    const sink = new Sink();
    const relay = new LineRelay(sink);
    const s = new PassThrough();
    relay.add(s);
    s.end('{"a":1}\n{"b":');
    await relay.drained(1000);
    expect(sink.writes).toEqual(['{"a":1}\n']);
  });

  it("stops reading every source while the destination is full, until it drains", async () => {
    const sink = new Sink();
    const relay = new LineRelay(sink);
    const [a, b] = [new PassThrough(), new PassThrough()];
    relay.add(a);
    relay.add(b);
    sink.full = true;
    a.write("one\n");
    await tick();
    expect(a.isPaused() && b.isPaused()).toBe(true);
    b.write("two\n");
    await tick();
    expect(sink.writes).toEqual(["one\n"]);
    sink.full = false;
    sink.emit("drain");
    await tick();
    expect(sink.writes).toEqual(["one\n", "two\n"]);
  });
});

describe("the group's /metrics", () => {
  it("sums counters and histograms over workers and keeps gauges per worker", async () => {
    const workers = [new Registry(), new Registry()].map((r) => ({ r, m: createMetrics(r, "t") }));
    workers[0]!.m.requests.inc({ route: "/v1", class: "read", code: 200 }, 3);
    workers[1]!.m.requests.inc({ route: "/v1", class: "read", code: 200 }, 4);
    workers[0]!.m.requestDuration.observe({ route: "/v1", class: "read" }, 0.002);
    workers[1]!.m.requestDuration.observe({ route: "/v1", class: "read" }, 0.2);
    workers[1]!.m.inflightNow.value = 2;
    const primary = new Registry();
    createPrimaryMetrics(primary).configReloads.inc({ result: "success" });
    const json = async (r: Registry) => (await r.getMetricsAsJSON()) as unknown as MetricJson[];
    const text = await combineMetrics([
      { worker: "primary", metrics: await json(primary) },
      { worker: "101", metrics: await json(workers[0]!.r) },
      { worker: "102", metrics: await json(workers[1]!.r) },
    ]);
    const s = parsePrometheusText(text);
    expect(s.value("gateway_requests_total", { route: "/v1", class: "read", code: "200" })).toBe(7);
    expect(s.value("gateway_request_duration_seconds_count", { route: "/v1", class: "read" })).toBe(2);
    expect(
      s.value("gateway_request_duration_seconds_bucket", { route: "/v1", class: "read", le: "0.0025" }),
    ).toBe(1);
    expect(s.value("gateway_config_reloads_total", { result: "success" })).toBe(1);
    expect(s.value("gateway_inflight_requests", { worker: "101" })).toBe(0);
    expect(s.value("gateway_inflight_requests", { worker: "102" })).toBe(2);
    expect(
      s
        .select("process_resident_memory_bytes")
        .map((x) => x.labels.worker)
        .sort(),
    ).toEqual(["101", "102", "primary"]);
    expect(
      s
        .select("gateway_build_info")
        .map((x) => x.labels.worker)
        .sort(),
    ).toEqual(["101", "102"]);
    expect(s.types.get("gateway_requests_total")).toBe("counter");
  });
});

describe("a worker's access line", () => {
  it("carries its pid right after service, as pino writes its own lines", () => {
    const writes: string[] = [];
    const logger = createLogger("info", { write: (s: string) => void writes.push(s) }, { pid: 4242 });
    const scope = new RequestScope(
      "r1",
      "GET",
      "1.1",
      0,
      { generation: new Generation() } as unknown as Runtime,
      [],
    );
    scope.clientIp = "10.0.0.1";
    const log = new AccessLog(logger, systemClock);
    log.onFinish(finishedScope(scope, 200, 1.5));
    log.flush();
    logger.info({ reqId: "r2" }, "request");
    const [access, pino] = writes
      .join("")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as object);
    expect(Object.keys(access!).slice(0, 5)).toEqual(["level", "time", "service", "pid", "reqId"]);
    expect(Object.keys(pino!).slice(0, 5)).toEqual(Object.keys(access!).slice(0, 5));
    expect(access).toMatchObject({ service: "gateway", pid: 4242 });
  });
});
