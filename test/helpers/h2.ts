/** A small HTTP/2 client for tests (node:http2): one request on a session, collected. */
import http2, {
  type ClientHttp2Session,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from "node:http2";

/** A collected HTTP/2 response. */
export interface H2Response {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Opens a session to `origin` trusting `ca` (and presenting a client certificate when given). */
export function h2connect(
  origin: string,
  tls: { ca: Buffer; cert?: Buffer; key?: Buffer },
): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(origin, { ...tls, servername: "localhost" });
    session.once("connect", () => {
      session.off("error", reject);
      session.on("error", () => {});
      resolve(session);
    });
    session.once("error", reject);
  });
}

/** One request on `session`; `body` is sent and the stream ended. */
export function h2request(
  session: ClientHttp2Session,
  headers: OutgoingHttpHeaders,
  body?: string | Buffer,
): Promise<H2Response> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined });
    let status = 0;
    let got: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      got = h;
      status = Number(h[":status"]);
    });
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => resolve({ status, headers: got, body: Buffer.concat(chunks).toString("utf8") }));
    stream.on("error", reject);
    if (body !== undefined) stream.end(body);
  });
}
