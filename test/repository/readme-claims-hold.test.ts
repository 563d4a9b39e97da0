/**
 * Three things the README once said that the code contradicted, each checked against
 * the behaviour itself, so the manual cannot drift from it again: a request Node's parser refuses
 * carries the rate-limit headers and is counted and logged; a duplicate `Host` is refused with 400
 * `bad_host`; the API listener speaks TLS (and HTTP/2) when `listen.tls` is set. Each test asserts
 * the behaviour on a real gateway, then that no sentence of the manual (README.md, docs/*.md and
 * CHANGELOG.md, issue 40) says otherwise.
 */
import https from "node:https";
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, rawRequest } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";
import { createPki, type TestPki } from "../helpers/tls.js";
import { manualFiles } from "../helpers/manual.js";

/** The manual as one line per paragraph (wrapped lines joined), so a claim is found whole. */
const paragraphs = manualFiles()
  .flatMap((f) => f.text.split(/\n\s*\n/))
  .map((p) => p.replace(/\s*\n\s*/g, " "));
const saying = (pattern: RegExp): string[] => paragraphs.filter((p) => pattern.test(p));

let upstream: { server: Server; url: string };
let plain: TestGateway;
let tls: TestGateway;
let pki: TestPki;

beforeAll(async () => {
  pki = createPki();
  upstream = await listen((_req, res) => res.end("ok"));
  const listener = { host: "127.0.0.1", port: 0, grace_ms: 1000 };
  [plain, tls] = await Promise.all([
    startGateway(testConfig(upstream.url, { listen: listener })),
    startGateway(
      testConfig(upstream.url, {
        listen: { ...listener, tls: { cert_file: pki.serverCertFile, key_file: pki.serverKeyFile } },
      }),
    ),
  ]);
});

afterAll(async () => {
  await Promise.all([plain.close(), tls.close()]);
  await closeServer(upstream.server);
  pki.remove();
});

const statusAndHeaders = (raw: string) => ({
  status: Number(raw.split(" ")[1]),
  head: raw.split("\r\n\r\n")[0]!.toLowerCase(),
});

describe("the manual says what the gateway does", () => {
  it("a request the parser refuses gets the rate-limit headers, a metric and an access line", async () => {
    const raw = await rawRequest(
      plain.apiPort,
      "GET /v1/x HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    );
    const { status, head } = statusAndHeaders(raw);
    expect(status).toBe(400);
    expect(head).toContain("x-ratelimit-limit:");
    const m = await scrape(plain.adminUrl);
    expect(m.value("gateway_requests_total", { route: "none", class: "anonymous", code: "400" })).toBe(1);
    expect(saying(/parser (refuses|rejects)[^.]*without rate-limit headers/i)).toEqual([]);
    expect(
      saying(/parser[^.]*(refuses|rejects)[^.]*appear in neither the metrics nor the access log/i),
    ).toEqual([]);
    expect(saying(/parser refuses[^.]*rate-limit headers/i).length).toBeGreaterThan(0);
  });

  it("a duplicate Host is refused with 400 bad_host", async () => {
    const raw = await rawRequest(
      plain.apiPort,
      "GET /v1/x HTTP/1.1\r\nHost: a\r\nHost: b\r\nAuthorization: Bearer valid-token\r\n\r\n",
    );
    const { status } = statusAndHeaders(raw);
    expect(status).toBe(400);
    expect(raw).toContain("Bad request");
    expect(saying(/duplicate `?Host`?[^.]*(not|never) (answer|refuse|reject)/i)).toEqual([]);
    expect(saying(/does not answer `?400`? as RFC 9112/i)).toEqual([]);
    expect(saying(/duplicate or missing `Host`.*?`400` `bad_host`/).length).toBeGreaterThan(0);
  });

  it("the API listener speaks TLS when listen.tls is set", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = https.get(
        { host: "127.0.0.1", port: tls.apiPort, path: "/v1/x", ca: pki.ca, servername: "localhost" },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
    });
    expect(status).toBe(401); // a TLS exchange, answered by the core
    expect(saying(/API listener speaks plain HTTP\./i)).toEqual([]);
    expect(saying(/API listener[^.]*plain HTTP only/i)).toEqual([]);
  });
});
