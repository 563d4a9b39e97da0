/**
 * A gateway response serialised for a raw HTTP/1.1 socket: the answers to requests Node's parser
 * refused and to WebSocket handshakes the gateway refuses, where no `ServerResponse` exists.
 * The connection always closes after it.
 */
import { STATUS_CODES } from "node:http";
import type { GatewayResponse } from "../core/responses.js";

/** @returns the whole response: status line, fields, `Connection: close`, body */
export function serializeResponse(r: GatewayResponse): string {
  let head = `HTTP/1.1 ${r.status} ${STATUS_CODES[r.status] ?? ""}\r\n`;
  for (const name in r.headers) head += `${name}: ${r.headers[name]!}\r\n`;
  return `${head}connection: close\r\n\r\n${r.body}`;
}
