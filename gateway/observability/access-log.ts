/**
 * The access line (SPEC §8), one per request, built by hand as one JSON string and written straight
 * to the logger's destination. Through `logger.info(obj)` pino spends about 40k instructions per
 * line (key loop, chindings, ISO time); this costs a few thousand (measured with callgrind, see
 * README "Performance"). The line has exactly the shape pino would write with the gateway's
 * options (`level` label, ISO `time`, `service`, the fields, `msg`), so log pipelines see one format.
 *
 * Fields: request id, method, path (normalised, no query: queries can hold `access_token`, RFC 6750
 * §2.3), route, class, plan (SPEC §10), status, durations (ms), the upstream endpoint (SPEC §16), identity, remaining, client IP,
 * protocol, the level and window that refused a call (`limited_by`, SPEC §22; `window`, SPEC §19), and while tracing is on the W3C trace id and the SERVER span's id (SPEC §13). Nothing in
 * it comes from a header other than `X-Request-Id` (validated) and, behind `trust_proxy`, the client
 * IP (a client's `traceparent` only as the trace id, which the propagator validated as 32 hex digits).
 */
import type { Clock } from "../base/clock.js";
import pino, { type DestinationStream, type Logger } from "pino";
import type { FinishObserver, FinishedRequest } from "./finished-request.js";

/** Plain shape of one access line (for tests and log pipelines). */
export interface AccessLine {
  level: "info";
  /** ISO 8601 UTC with milliseconds. */
  time: string;
  service: string;
  reqId: string;
  method: string;
  path: string;
  route: string | null;
  class: string | null;
  /** The caller's plan (a configured name), or null: no plan, the anonymous class, no class. */
  plan: string | null;
  status: number;
  durationMs: number;
  upstreamMs: number | null;
  /** `host:port` of the upstream endpoint that answered (SPEC §16); null for calls never proxied. */
  endpoint: string | null;
  /** Upstream tries (SPEC §17: 1 without retries); null for calls never proxied. */
  attempts: number | null;
  identity: string | null;
  remaining: number | null;
  clientIp: string;
  /** HTTP version of the client connection: `1.0`, `1.1` or `2`. */
  protocol: "1.0" | "1.1" | "2";
  /** While tracing is on: the trace id (32 hex digits), sampled or not. */
  traceId?: string;
  /** While tracing is on: the request's SERVER span id (16 hex digits). */
  spanId?: string;
  error?: string;
  aborted?: true;
  /** A decision request's line (SPEC §23): the status is the decision answer's. */
  mode?: "decision";
  /** On a refused decision: the level that refused it, `"identity"` or a budget's key (SPEC §22). */
  limited_by?: string;
  /** On a refused decision: the refusing window's name, `"month"` or `"60s"` (SPEC §19). */
  window?: string;
  msg: "request";
}

/** pino's numeric `info` level. */
const INFO = 30;
/**
 * Lines are handed to the destination in chunks of about this many characters: sonic-boom's
 * `maxWrite`, so each chunk is one `fs.write` on the thread pool. Interleaved A/B on the 2-core
 * bench: 16 KiB chunks cost 10 % less gateway CPU per request than 4 KiB ones, 64 KiB 19 % more.
 */
const CHUNK_CHARS = 16384;

/** Writes access lines to a pino logger's destination, at `info` when that level is enabled. */
export class AccessLog implements FinishObserver {
  private readonly stream: DestinationStream;
  private readonly head: string;
  private lastMs = 0;
  private lastTime = "";
  /** Lines not yet handed to the destination (each ends with a newline). */
  private pending = "";

  /**
   * @param logger - a pino logger; lines go to its destination (`pino.symbols.streamSym`), so
   *   they interleave with its other lines in order, and carry its base fields as pino writes them
   *   (`"service"`, and a cluster worker's `"pid"`)
   */
  /** @param clock - the wall clock of each line's `time` */
  constructor(
    private readonly logger: Logger,
    private readonly clock: Clock,
  ) {
    const own = logger as unknown as Record<symbol, unknown>;
    this.stream = own[pino.symbols.streamSym] as DestinationStream;
    this.head = `${own[pino.symbols.chindingsSym] as string},"reqId":`;
  }

  /** {@link FinishObserver}: one line per request. */
  onFinish(scope: FinishedRequest): void {
    if (this.logger.levelVal > INFO) return;
    const status = scope.status;
    const route = scope.route;
    const decision = scope.decision;
    const plan = scope.policy === null ? null : scope.policy.plan;
    let line =
      `{"level":"info","time":"${this.time()}"${this.head}${JSON.stringify(scope.requestId)}` +
      `,"method":${JSON.stringify(scope.method)},"path":${JSON.stringify(scope.path)}` +
      `,"route":${route === null ? "null" : JSON.stringify(route.prefix)}` +
      `,"class":${scope.className === "" ? "null" : JSON.stringify(scope.className)}` +
      `,"plan":${plan === null ? "null" : JSON.stringify(plan)}` +
      `,"status":${status},"durationMs":${ms(scope.durationMs)}` +
      `,"upstreamMs":${scope.upstreamMs >= 0 ? ms(scope.upstreamMs) : "null"}` +
      `,"endpoint":${scope.endpoint === null ? "null" : scope.endpoint.json}` +
      `,"attempts":${scope.attempts === 0 ? "null" : scope.attempts}` +
      `,"identity":${scope.identity === "" ? "null" : JSON.stringify(scope.identity)}` +
      `,"remaining":${decision === null ? "null" : decision.remaining}` +
      `,"clientIp":${JSON.stringify(scope.clientIp)},"protocol":"${scope.protocol}"`;
    const trace = scope.trace;
    if (trace !== null) line += `,"traceId":"${trace.traceId}","spanId":"${trace.spanId}"`;
    if (scope.errorCode !== null) line += `,"error":"${scope.errorCode}"`;
    if (status === 499) line += `,"aborted":true`;
    if (scope.shed !== null) line += `,"shed":"${scope.shed}"`;
    if (scope.mode === "decision") line += `,"mode":"decision"`;
    if (scope.limitedBy !== null) line += `,"limited_by":${JSON.stringify(scope.limitedBy)}`;
    if (scope.limitingWindow !== null) line += `,"window":"${scope.limitingWindow}"`;
    this.pending += line + `,"msg":"request"}\n`;
    if (this.pending.length >= CHUNK_CHARS) this.flush();
  }

  /**
   * Hands buffered lines to the destination. The gateway calls it once a second and before it
   * stops; lines are otherwise handed over in chunks of about 16 KiB ({@link CHUNK_CHARS}):
   * sonic-boom measures its whole pending buffer on every write, and each of its writes is a
   * thread-pool round trip.
   */
  flush(): void {
    if (this.pending === "") return;
    const chunk = this.pending;
    this.pending = "";
    this.stream.write(chunk);
  }

  /** ISO time of now, formatted once per millisecond. */
  private time(): string {
    const now = this.clock.nowMs();
    if (now !== this.lastMs) {
      this.lastMs = now;
      this.lastTime = new Date(now).toISOString();
    }
    return this.lastTime;
  }
}

/** Milliseconds rounded to the microsecond, as JSON (never NaN or Infinity). */
function ms(value: number): string {
  const rounded = Math.round(value * 1000) / 1000;
  return Number.isFinite(rounded) ? String(rounded) : "null";
}
