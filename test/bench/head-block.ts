/**
 * The response head's cost in isolation (issue 41's "header block" lever): what the gateway does
 * to an upstream's head today (undici's parsed field object, hop-by-hop fields removed in place,
 * the gateway's fields written over it, `res.writeHead(status, object)`), against the head built
 * as one flat `[name, value, …]` array in one pass over the upstream's fields (hop-by-hop names
 * skipped, the gateway's fields appended), which Node's `_storeHeader` takes without its
 * `for…in` and own-property checks. Both make the same head (checked); a `ServerResponse` made and
 * given a fixed head is measured too and subtracted, so the figures are the head's own work.
 *
 * Usage: `node --import tsx test/bench/head-block.ts [heads per round] [rounds]` (200000, 5);
 * prints ns per head for each way, interleaved round by round.
 */
import { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import type { HeaderMap } from "../../gateway/base/request-facts.js";
import { stripHopByHop } from "../../gateway/proxy/forwarded-headers.js";
import { median } from "./report.js";

const HEADS = Number(process.argv[2] ?? 200_000);
const ROUNDS = Number(process.argv[3] ?? 5);

const req = new IncomingMessage(new Socket());
req.method = "GET";
req.httpVersionMajor = 1;
req.httpVersionMinor = 1;

/** The bench's nginx answer, as undici's `parseHeaders` hands it over (lower-case names, in order). */
function upstreamFields(): HeaderMap {
  const h: HeaderMap = {};
  h.server = "nginx/1.22.1";
  h.date = "Sat, 28 Nov 2026 08:00:00 GMT";
  h["content-type"] = "application/json";
  h["content-length"] = "57";
  h.connection = "keep-alive";
  return h;
}

const REQUEST_ID = "5f0c3e1a9b2d4c6e8f7a1b3c5d7e9f01";

/** Hop-by-hop names (RFC 9110 §7.6.1, as `stripHopByHop` removes them when Connection names none). */
function hopByHop(name: string): boolean {
  switch (name) {
    case "connection":
    case "keep-alive":
    case "proxy-connection":
    case "te":
    case "trailer":
    case "upgrade":
    case "proxy-authorization":
    case "transfer-encoding":
      return true;
  }
  return false;
}

/** The gateway's fields written over the upstream's (`responses.ts` `addGatewayFields`). */
function addFields(h: HeaderMap): HeaderMap {
  h["x-request-id"] = REQUEST_ID;
  h["x-ratelimit-limit"] = "5000";
  h["x-ratelimit-remaining"] = "4999";
  h["x-ratelimit-reset"] = "1795000000";
  h["x-ratelimit-resource"] = "read";
  return h;
}

/** Today's way: undici's object edited in place (`proxy-step.ts` `upstreamHead`). */
function editedInPlace(): HeaderMap {
  const h = upstreamFields();
  stripHopByHop(h);
  return addFields(h);
}

function inPlace(res: ServerResponse): void {
  res.writeHead(200, editedInPlace());
}

/** The lever: one pass into a flat array (Connection naming no other field, as here). */
function flat(res: ServerResponse): void {
  const h = upstreamFields();
  const out: string[] = [];
  for (const name in h) if (!hopByHop(name)) out.push(name, h[name] as string);
  out.push(
    "x-request-id",
    REQUEST_ID,
    "x-ratelimit-limit",
    "5000",
    "x-ratelimit-remaining",
    "4999",
    "x-ratelimit-reset",
    "1795000000",
    "x-ratelimit-resource",
    "read",
  );
  res.writeHead(200, out);
}

/** Edited in place as today, then handed to Node as a flat array (the conversion's own pass). */
function inPlaceThenFlat(res: ServerResponse): void {
  const h = editedInPlace();
  const out: string[] = [];
  for (const name in h) out.push(name, h[name] as string);
  res.writeHead(200, out);
}

/** One pass into a fresh object (hop-by-hop names skipped), then the gateway's fields on it. */
function fresh(res: ServerResponse): void {
  const h = upstreamFields();
  const out: HeaderMap = {};
  for (const name in h) if (!hopByHop(name)) out[name] = h[name];
  res.writeHead(200, addFields(out));
}

/** The floor both share: a response object and a head of one fixed field. */
function floor(res: ServerResponse): void {
  res.writeHead(200, ["content-length", "57"]);
}

type Way = (res: ServerResponse) => void;

function headOf(way: Way): string {
  const res = new ServerResponse(req);
  way(res);
  return (res as unknown as { _header: string })._header;
}

/** ns per head over `HEADS` heads. */
function time(way: Way): number {
  let bytes = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < HEADS; i++) {
    const res = new ServerResponse(req);
    way(res);
    bytes += (res as unknown as { _header: string })._header.length;
  }
  const ns = Number(process.hrtime.bigint() - t0) / HEADS;
  if (bytes === 0) throw new Error("no head written");
  return ns;
}

if (headOf(inPlace) !== headOf(flat) || headOf(inPlace) !== headOf(inPlaceThenFlat))
  throw new Error("the two ways write different heads");
const ways: [string, Way][] = [
  ["floor", floor],
  ["in place", inPlace],
  ["flat", flat],
  ["converted", inPlaceThenFlat],
  ["fresh", fresh],
];
const results = new Map<string, number[]>(ways.map(([n]) => [n, []]));
for (const [, way] of ways) time(way); // warm-up
for (let r = 0; r < ROUNDS; r++) for (const [name, way] of ways) results.get(name)!.push(time(way));
const base = median(results.get("floor")!);
for (const [name, xs] of results)
  console.log(
    `${name.padEnd(9)} ${xs.map((x) => x.toFixed(0).padStart(5)).join(" ")} ns/head` +
      (name === "floor" ? "" : `  (median ${(median(xs) - base).toFixed(0)} ns over the floor)`),
  );
