/**
 * SPEC §13 `auth.jwks`, with a real IdP (oidc-provider) publishing the JWKS and a real OTLP
 * receiver: a request whose JWT needs a key-set fetch (the set not loaded yet, or an unknown `kid`)
 * has an `auth.jwks` child span of its SERVER span, with `server.address`/`server.port` of the JWKS
 * URL, ended with the fetch; a failed fetch is an error span; requests waiting for one shared
 * refetch each record their own; a token whose key is held makes no network call and records no
 * such span.
 */
import type { Server } from "node:http";
import { decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JwtAuthenticator } from "../../gateway/auth/jwt-authenticator.js";
import { ManualClock } from "../../gateway/base/clock.js";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import {
  AUDIENCE,
  jwtAuthConfig,
  signingKey,
  signJwt,
  startJwtIdp,
  type JwtIdp,
  type SigningKey,
} from "../helpers/jwt-idp.js";
import {
  KIND,
  STATUS,
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedSpan,
} from "../helpers/otlp-receiver.js";

const clock = new ManualClock(Date.now());
/**
 * Moves the wall clock only (the JWKS cache's age): the spans' times come from the monotonic
 * reading, which the tracing SDK's own spans (`auth.jwks`) read unmoved.
 */
const later = (ms: number): void => clock.set(clock.nowMs() + ms);
let a: SigningKey, b: SigningKey, unpublished: SigningKey;
let rx: OtlpReceiver;
let idp: JwtIdp;
let upstream: { server: Server; url: string };
let gw: TestGateway;

beforeAll(async () => {
  process.env.OTEL_BSP_SCHEDULE_DELAY = "50";
  [a, b, unpublished] = await Promise.all([signingKey("key-a"), signingKey("key-b"), signingKey("gone")]);
  [rx, idp, upstream] = await Promise.all([
    startOtlpReceiver(),
    startJwtIdp([a]),
    listen((_req, res) => res.end("ok")),
  ]);
  // The gateway starts while the JWKS endpoint is down: it holds no key.
  await idp.stop();
  gw = await startGateway(
    testConfig(upstream.url, {
      auth: jwtAuthConfig(idp, { jwks_url: idp.jwksUrl }),
      rate_limits: {
        classes: { read: { windows: [{ limit: 1000, window_s: 3600 }] } },
        anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
      },
      tracing: { endpoint: rx.endpoint, sample_ratio: 1 },
    }),
    { clock },
  );
  await (gw.gateway.runtime.auth.authenticators[0] as JwtAuthenticator).keys.started;
  await idp.start();
});

afterAll(async () => {
  delete process.env.OTEL_BSP_SCHEDULE_DELAY;
  await gw?.close();
  await Promise.all([upstream && closeServer(upstream.server), rx?.close(), idp?.stop()]);
});

/** A fresh sampled trace id per request. */
let seq = 0;
const newTraceId = () => `cbf92f3577b34da6a3ce9290${(++seq).toString(16).padStart(8, "0")}`;

/**
 * Sends one traced request and returns its status and spans, once its SERVER span arrived (it
 * ends after its children, so they were exported before it or with it).
 */
async function traced(token: string): Promise<{ status: number; spans: ReceivedSpan[] }> {
  const traceId = newTraceId();
  const r = await request(`${gw.url}/v1/items`, {
    headers: { authorization: `Bearer ${token}`, traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
  });
  const all = await rx.waitFor((s) => s.some((x) => x.traceId === traceId && x.kind === KIND.SERVER));
  return { status: r.status, spans: all.filter((s) => s.traceId === traceId) };
}

const names = (spans: ReceivedSpan[]) => spans.map((s) => s.name).sort();
const jwksPort = () => Number(new URL(idp.jwksUrl).port);

/** The request's `auth.jwks` span, checked against its SERVER span: parent, attributes, timing. */
function jwksSpanOf(spans: ReceivedSpan[]): ReceivedSpan {
  const server = spans.find((s) => s.kind === KIND.SERVER)!;
  const jwks = spans.find((s) => s.name === "auth.jwks")!;
  expect(jwks).toMatchObject({ kind: KIND.INTERNAL, parentSpanId: server.spanId });
  expect(jwks.attributes).toMatchObject({ "server.address": "127.0.0.1", "server.port": jwksPort() });
  // Within the SERVER span, give or take the SDK's millisecond anchoring of performance time.
  const ms = 1_000_000n;
  expect(jwks.startNs + ms >= server.startNs && jwks.endNs <= server.endNs + ms).toBe(true);
  return jwks;
}

describe("auth.jwks", () => {
  it("is recorded for a request that fetches the key set it does not hold yet", async () => {
    const token = await idp.issueJwt("read");
    const before = idp.jwksRequests();
    const { status, spans } = await traced(token);
    expect(status).toBe(200);
    expect(idp.jwksRequests()).toBe(before + 1);
    expect(names(spans)).toEqual(["GET", "GET /v1", "auth.jwks"]);
    const jwks = jwksSpanOf(spans);
    expect(jwks.statusCode).toBe(STATUS.UNSET);
    expect(jwks.attributes).toEqual({ "server.address": "127.0.0.1", "server.port": jwksPort() });
    expect(JSON.stringify(spans.map((s) => [s.name, s.attributes]))).not.toContain(token);
  });

  it("is not recorded for a token whose key is held (no network call)", async () => {
    const token = await idp.issueJwt("read");
    const before = idp.jwksRequests();
    const { status, spans } = await traced(token);
    expect(status).toBe(200);
    expect(idp.jwksRequests()).toBe(before);
    expect(names(spans)).toEqual(["GET", "GET /v1"]);
  });

  it("is recorded for the refetch an unknown kid triggers", async () => {
    idp.setKeys([b, a]);
    later(30_000);
    const before = idp.jwksRequests();
    const { status, spans } = await traced(await idp.issueJwt("read"));
    expect(status).toBe(200);
    expect(idp.jwksRequests()).toBe(before + 1);
    expect(names(spans)).toEqual(["GET", "GET /v1", "auth.jwks"]);
    expect(jwksSpanOf(spans).statusCode).toBe(STATUS.UNSET);
  });

  it("is an error when the fetch fails (the request gets 503)", async () => {
    await idp.stop();
    later(30_000);
    const now = Math.floor(clock.nowMs() / 1000);
    const claims = { iss: idp.issuer, aud: AUDIENCE, sub: "u", client_id: "app", iat: now, exp: now + 600 };
    const { status, spans } = await traced(await signJwt(unpublished, claims));
    expect(status).toBe(503);
    expect(names(spans)).toEqual(["GET /v1", "auth.jwks"]);
    const jwks = jwksSpanOf(spans);
    expect(jwks.statusCode).toBe(STATUS.ERROR);
    expect(jwks.attributes["error.type"]).toBe("KeySetFetchError");
  });

  it("is recorded by each request waiting for one shared refetch", async () => {
    await idp.start();
    later(30_000);
    const keys = (gw.gateway.runtime.auth.authenticators[0] as JwtAuthenticator).keys;
    const tracing = gw.gateway.runtime.tracing!;
    const traceIds = [newTraceId(), newTraceId()];
    const traces = traceIds.map((id) =>
      tracing.begin({ traceparent: `00-${id}-00f067aa0ba902b7-01` }, "GET", performance.now(), false),
    );
    const now = Math.floor(clock.nowMs() / 1000);
    const claims = { iss: idp.issuer, aud: AUDIENCE, sub: "u", client_id: "app", iat: now, exp: now + 600 };
    const tokens = await Promise.all(
      ["invented-1", "invented-2"].map((kid) => signJwt({ ...unpublished, kid }, claims)),
    );
    const before = idp.jwksRequests();
    // Called in one turn: the first starts the refetch, the second waits for it (coalesced).
    const results = await Promise.allSettled(
      tokens.map((token, i) => {
        const [protectedHeader, payload, signature] = token.split(".") as [string, string, string];
        const jws = { protected: protectedHeader, payload, signature };
        return keys.resolve(decodeProtectedHeader(token), jws, traces[i]!);
      }),
    );
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]); // not listed: 401
    expect(idp.jwksRequests()).toBe(before + 1);
    for (const t of traces) t.server!.end();
    const all = await rx.waitFor((s) =>
      traceIds.every((id) => s.some((x) => x.traceId === id && x.kind === KIND.SERVER)),
    );
    traces.forEach((t, i) => {
      const spans = all.filter((s) => s.traceId === traceIds[i]);
      expect(names(spans)).toEqual(["GET", "auth.jwks"]);
      expect(jwksSpanOf(spans).statusCode).toBe(STATUS.UNSET);
      expect(spans.find((s) => s.name === "auth.jwks")!.parentSpanId).toBe(t.spanId);
    });
  });
});
