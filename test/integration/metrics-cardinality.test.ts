/**
 * SPEC §8: "Label values come from config names, never from raw paths or tokens." After a warm-up
 * that produces every (route, class, status) the traffic below can produce, 1000 requests with
 * random paths, query strings, methods and tokens add no series to the gateway's families, and no
 * label value carries anything the requests made up.
 *
 * Only `gateway_*` series are counted: prom-client's default process metrics are labelled by what
 * the runtime holds (`nodejs_active_handles{type}`, `nodejs_gc_duration_seconds{kind}`), which
 * changes with GC and socket churn, not with request content.
 */
import { randomBytes, randomInt } from "node:crypto";
import type { Agent } from "node:http";
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { agent, closeServer, listen, request } from "../helpers/http.js";
import { scrape, seriesKey, type Sample } from "../helpers/prom.js";

const RANDOM_REQUESTS = 1000;
const CONCURRENCY = 25;
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;
/** Identities in the tokens file; each one's write budget is spent during the warm-up. */
const VALID_TOKENS = ["valid-token", "reader-token", "client-token"] as const;
const WRITE_LIMIT = 2;

/** Random strings the requests carry; no label value may contain one. */
const madeUp = new Set<string>();

function word(): string {
  const w = `r${randomBytes(randomInt(3, 9)).toString("base64url")}`;
  madeUp.add(w);
  return w;
}

function pick<T>(items: readonly T[]): T {
  return items[randomInt(items.length)]!;
}

/** A random path: under a route or not, random segments, dot segments, encodings, a query. */
function randomTarget(): string {
  const prefix = pick(["/v1", "/v1", "/v1", "/admin-only", "", `/${word()}`]);
  const segments = Array.from({ length: randomInt(0, 5) }, () =>
    pick([word(), word(), encodeURIComponent(`é ${word()}`), ".", "..", `%2e%2e`, `${word()}%2F${word()}`]),
  );
  const path = `${prefix}/${segments.join("/")}`;
  const query = pick([
    "",
    `?${word()}=${word()}`,
    `?access_token=${word()}`,
    `?q=${word()}&page=${randomInt(9)}`,
  ]);
  return path + query;
}

/** A random `Authorization` header: none, a valid or unknown token, or a malformed one. */
function randomAuth(): Record<string, string> {
  switch (randomInt(6)) {
    case 0:
      return {};
    case 1:
      return { authorization: `Bearer ${word()}` };
    case 2:
      return { authorization: `Bearer ${word()} ${word()}` };
    case 3:
      return { authorization: `Basic ${word()}` };
    default:
      return { authorization: `Bearer ${pick(VALID_TOKENS)}` };
  }
}

function gatewaySeries(samples: readonly Sample[]): string[] {
  return samples
    .filter((s) => s.name.startsWith("gateway_"))
    .map(seriesKey)
    .sort();
}

describe("metric series under random traffic", () => {
  let upstream: { server: Server; url: string };
  let gw: TestGateway;
  let keepAlive: Agent;

  beforeAll(async () => {
    upstream = await listen((req, res) => {
      req.resume();
      req.on("end", () => res.writeHead(200, { "content-type": "text/plain" }).end("ok"));
    });
    gw = await startGateway(
      testConfig(upstream.url, {
        routes: [
          { prefix: "/v1", upstream: "docs" },
          { prefix: "/admin-only", upstream: "docs", scopes: ["admin"] },
        ],
        rate_limits: {
          classes: {
            read: { match: { methods: ["GET", "HEAD"] }, windows: [{ limit: 100_000, window_s: 3600 }] },
            write: {
              match: { methods: ["POST", "PUT", "PATCH", "DELETE"] },
              windows: [{ limit: WRITE_LIMIT, window_s: 3600 }],
            },
            other: { windows: [{ limit: 100_000, window_s: 3600 }] },
          },
          anonymous: { windows: [{ limit: 100_000, window_s: 3600 }] },
        },
      }),
    );
    keepAlive = agent();
  });

  afterAll(async () => {
    keepAlive.destroy();
    await gw.close();
    await closeServer(upstream.server);
  });

  const send = (target: string, method: string, headers: Record<string, string>) =>
    request(`${gw.url}${target}`, { method, headers, agent: keepAlive });

  it("adds no gateway series after a warm-up that touched every status, and no label holds request data", async () => {
    // Warm-up: every route (and none), every class, every status the random traffic can produce.
    const warmStatuses = new Set<number>();
    const warm = async (target: string, method: string, headers: Record<string, string>) =>
      warmStatuses.add((await send(target, method, headers)).status);
    for (const token of VALID_TOKENS) {
      const auth = { authorization: `Bearer ${token}` };
      for (const method of METHODS) {
        await warm("/v1/x", method, auth);
        await warm("/admin-only/x", method, auth);
      }
      // Spend the write budget, so writes answer 429 from here on.
      for (let i = 0; i < WRITE_LIMIT; i++) await warm("/v1/x", "POST", auth);
      await warm("/v1/x", "POST", auth);
    }
    const anonymous: Record<string, string>[] = [
      {},
      { authorization: "Bearer unknown-warm" },
      { authorization: "Basic x" },
    ];
    for (const headers of anonymous) {
      for (const target of ["/v1/x", "/admin-only/x"]) await warm(target, "GET", headers);
    }
    await warm("/nowhere", "GET", {});
    await warm("/v1/%ff", "GET", {});
    expect([...warmStatuses].sort()).toEqual([200, 400, 401, 403, 404, 429]);
    const before = await scrape(gw.adminUrl);

    const seen = new Set<number>();
    for (let sent = 0; sent < RANDOM_REQUESTS; sent += CONCURRENCY) {
      const batch = Array.from({ length: CONCURRENCY }, () =>
        send(randomTarget(), pick(METHODS), randomAuth()).then((r) => seen.add(r.status)),
      );
      await Promise.all(batch);
    }
    const after = await scrape(gw.adminUrl);

    // The random traffic did reach the pipeline, with a spread of outcomes.
    expect(after.sum("gateway_requests_total") - before.sum("gateway_requests_total")).toBe(RANDOM_REQUESTS);
    expect(seen.size).toBeGreaterThanOrEqual(4);
    expect(gatewaySeries(after.samples)).toEqual(gatewaySeries(before.samples));
    expect(after.samples.filter((s) => s.name.startsWith("gateway_")).length).toBe(
      before.samples.filter((s) => s.name.startsWith("gateway_")).length,
    );
    const leaked = after.samples.flatMap((s) =>
      Object.values(s.labels)
        .filter((v) => [...madeUp].some((w) => v.includes(w)) || VALID_TOKENS.some((t) => v.includes(t)))
        .map((v) => `${s.name}: ${v}`),
    );
    expect(leaked).toEqual([]);
  });
});
