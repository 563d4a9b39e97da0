/**
 * A real OTLP/HTTP trace receiver on loopback: it accepts `POST /v1/traces` with the protobuf body
 * the gateway's exporter really sends, decodes it with protobufjs against the OTLP trace messages
 * (opentelemetry-proto `collector/trace/v1` and `trace/v1`, field numbers as published), and lets a
 * test wait for spans by predicate. Ids are lower-case hex, attribute values plain JS values.
 */
import { EventEmitter } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import protobuf from "protobufjs";

/** One decoded span, flattened with its resource. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  traceState: string;
  name: string;
  /** OTLP `SpanKind`: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** OTLP `Status.code`: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  /** W3C trace flags in the low 8 bits. */
  flags: number;
  startNs: bigint;
  endNs: bigint;
  resource: Record<string, string | number | boolean>;
  /** `Date.now()` when the receiver got it. */
  receivedAtMs: number;
}

/** Span kinds (OTLP `Span.SpanKind`). */
export const KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;
/** Status codes (OTLP `Status.StatusCode`). */
export const STATUS = { UNSET: 0, OK: 1, ERROR: 2 } as const;

const f = (type: string, id: number, rule?: "repeated") => (rule ? { type, id, rule } : { type, id });
const root = protobuf.Root.fromJSON({
  nested: {
    otlp: {
      nested: {
        ExportTraceServiceRequest: { fields: { resourceSpans: f("ResourceSpans", 1, "repeated") } },
        ResourceSpans: {
          fields: {
            resource: f("Resource", 1),
            scopeSpans: f("ScopeSpans", 2, "repeated"),
            schemaUrl: f("string", 3),
          },
        },
        Resource: {
          fields: { attributes: f("KeyValue", 1, "repeated"), droppedAttributesCount: f("uint32", 2) },
        },
        ScopeSpans: {
          fields: {
            scope: f("InstrumentationScope", 1),
            spans: f("Span", 2, "repeated"),
            schemaUrl: f("string", 3),
          },
        },
        InstrumentationScope: {
          fields: { name: f("string", 1), version: f("string", 2), attributes: f("KeyValue", 3, "repeated") },
        },
        Span: {
          fields: {
            traceId: f("bytes", 1),
            spanId: f("bytes", 2),
            traceState: f("string", 3),
            parentSpanId: f("bytes", 4),
            flags: f("fixed32", 16),
            name: f("string", 5),
            kind: f("int32", 6),
            startTimeUnixNano: f("fixed64", 7),
            endTimeUnixNano: f("fixed64", 8),
            attributes: f("KeyValue", 9, "repeated"),
            droppedAttributesCount: f("uint32", 10),
            events: f("Event", 11, "repeated"),
            droppedEventsCount: f("uint32", 12),
            links: f("Link", 13, "repeated"),
            droppedLinksCount: f("uint32", 14),
            status: f("Status", 15),
          },
        },
        Event: {
          fields: {
            timeUnixNano: f("fixed64", 1),
            name: f("string", 2),
            attributes: f("KeyValue", 3, "repeated"),
          },
        },
        Link: {
          fields: {
            traceId: f("bytes", 1),
            spanId: f("bytes", 2),
            traceState: f("string", 3),
            attributes: f("KeyValue", 4, "repeated"),
            flags: f("fixed32", 6),
          },
        },
        Status: { fields: { message: f("string", 2), code: f("int32", 3) } },
        KeyValue: { fields: { key: f("string", 1), value: f("AnyValue", 2) } },
        AnyValue: {
          oneofs: {
            value: {
              oneof: [
                "stringValue",
                "boolValue",
                "intValue",
                "doubleValue",
                "arrayValue",
                "kvlistValue",
                "bytesValue",
              ],
            },
          },
          fields: {
            stringValue: f("string", 1),
            boolValue: f("bool", 2),
            intValue: f("int64", 3),
            doubleValue: f("double", 4),
            arrayValue: f("ArrayValue", 5),
            kvlistValue: f("KeyValueList", 6),
            bytesValue: f("bytes", 7),
          },
        },
        ArrayValue: { fields: { values: f("AnyValue", 1, "repeated") } },
        KeyValueList: { fields: { values: f("KeyValue", 1, "repeated") } },
      },
    },
  },
});
const REQUEST = root.lookupType("otlp.ExportTraceServiceRequest");

interface PlainKeyValue {
  key: string;
  value?: { stringValue?: string; boolValue?: boolean; intValue?: string; doubleValue?: number };
}
interface PlainSpan {
  traceId?: Uint8Array;
  spanId?: Uint8Array;
  parentSpanId?: Uint8Array;
  traceState?: string;
  name?: string;
  kind?: number;
  flags?: number;
  startTimeUnixNano?: string;
  endTimeUnixNano?: string;
  attributes?: PlainKeyValue[];
  status?: { code?: number };
}
interface PlainRequest {
  resourceSpans?: { resource?: { attributes?: PlainKeyValue[] }; scopeSpans?: { spans?: PlainSpan[] }[] }[];
}

function attributesOf(kvs: PlainKeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const kv of kvs ?? []) {
    const v = kv.value ?? {};
    if (v.stringValue !== undefined) out[kv.key] = v.stringValue;
    else if (v.boolValue !== undefined) out[kv.key] = v.boolValue;
    else if (v.intValue !== undefined) out[kv.key] = Number(v.intValue);
    else if (v.doubleValue !== undefined) out[kv.key] = v.doubleValue;
  }
  return out;
}

const hex = (b: Uint8Array | undefined): string => (b === undefined ? "" : Buffer.from(b).toString("hex"));

/** Decodes one `ExportTraceServiceRequest` body into flat spans. */
export function decodeTraces(body: Uint8Array, receivedAtMs = Date.now()): ReceivedSpan[] {
  const plain = REQUEST.toObject(REQUEST.decode(body), { longs: String, defaults: false }) as PlainRequest;
  const out: ReceivedSpan[] = [];
  for (const rs of plain.resourceSpans ?? []) {
    const resource = attributesOf(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          parentSpanId: hex(s.parentSpanId),
          traceState: s.traceState ?? "",
          name: s.name ?? "",
          kind: s.kind ?? 0,
          attributes: attributesOf(s.attributes),
          statusCode: s.status?.code ?? 0,
          flags: s.flags ?? 0,
          startNs: BigInt(s.startTimeUnixNano ?? "0"),
          endNs: BigInt(s.endTimeUnixNano ?? "0"),
          resource,
          receivedAtMs,
        });
      }
    }
  }
  return out;
}

/** A started receiver. */
export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>/v1/traces`. */
  readonly endpoint: string;
  /** Every span received, in arrival order. */
  readonly spans: ReceivedSpan[];
  /** Every export request's `content-type`. */
  readonly contentTypes: string[];
  /**
   * @returns the spans received so far, once `done(spans)` holds (checked on every arrival)
   * @throws Error after `timeoutMs`
   */
  waitFor(done: (spans: readonly ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

/** Starts a receiver on 127.0.0.1, port 0 (or `port`). */
export async function startOtlpReceiver(port = 0): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const arrivals = new EventEmitter();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      let body = Buffer.concat(chunks);
      if (req.headers["content-encoding"] === "gzip") body = gunzipSync(body);
      contentTypes.push(req.headers["content-type"] ?? "");
      spans.push(...decodeTraces(body));
      // An empty ExportTraceServiceResponse: full success.
      res.writeHead(200, { "content-type": "application/x-protobuf", "content-length": 0 }).end();
      arrivals.emit("spans");
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    endpoint: `http://127.0.0.1:${bound}/v1/traces`,
    spans,
    contentTypes,
    waitFor(done, timeoutMs = 5000) {
      if (done(spans)) return Promise.resolve([...spans]);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          arrivals.off("spans", check);
          reject(new Error(`the receiver did not get the expected spans within ${timeoutMs} ms`));
        }, timeoutMs);
        const check = (): void => {
          if (!done(spans)) return;
          clearTimeout(timer);
          arrivals.off("spans", check);
          resolve([...spans]);
        };
        arrivals.on("spans", check);
      });
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
