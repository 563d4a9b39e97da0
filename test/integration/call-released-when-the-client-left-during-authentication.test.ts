/**
 * SPEC §18: a call is in flight from its admission to its one end. A client that goes away while
 * its token is still being introspected has ended its request before the upstream admits the
 * call; the call admitted afterwards is released at once, so the upstream's ledger does not keep
 * a call that will never end (the limit would otherwise shrink by one for every such client).
 */
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen } from "../helpers/http.js";
import { waitFor } from "../helpers/redis-server.js";

let gw: TestGateway;
let upstream: Awaited<ReturnType<typeof listen>>;
let idp: Awaited<ReturnType<typeof listen>>;
/** Introspection answers held until the test lets them go. */
const held: ServerResponse[] = [];

beforeAll(async () => {
  upstream = await listen((_req, res) => res.end("ok"));
  idp = await listen((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    held.push(res);
  });
  gw = await startGateway(
    testConfig(upstream.url, {
      upstreams: { docs: { url: upstream.url, timeout_ms: 2000, max_in_flight: 10 } },
      auth: {
        realm: "api",
        introspection: {
          url: `${idp.url}/introspect`,
          client_id: "gw",
          client_secret: "s3cret",
          timeout_ms: 5000,
        },
      },
    }),
  );
});

afterAll(async () => {
  await gw?.close();
  await closeServer(idp.server);
  await closeServer(upstream.server);
});

describe("a client that leaves during authentication", () => {
  it("leaves no call counted in flight once its token is known", async () => {
    const req = http.get(`${gw.url}/v1/items`, {
      headers: { authorization: "Bearer slow-token" },
      agent: false,
    });
    req.on("error", () => {});
    await waitFor("the token asked about", async () => held.length === 1, 5000);
    req.destroy();
    await waitFor("the request ended", async () => gw.gateway.runtime.generation.calls === 0, 5000);
    held[0]!.writeHead(200, { "content-type": "application/json" });
    held[0]!.end(JSON.stringify({ active: true, sub: "alice", client_id: "app", scope: "read" }));
    const docs = gw.gateway.runtime.upstreams.get("docs")!;
    // Counted as valid in the same step that then asks the upstream to admit the call.
    await waitFor(
      "the token found valid",
      async () =>
        (await gw.gateway.registry.metrics()).includes('gateway_auth_results_total{result="valid"} 1'),
      5000,
    );
    expect(docs.ledger).toEqual({ callsAdmitted: 0, triesDispatched: 0, retries: 0 });
  });
});
