/**
 * `--connect` for `auth`: the identity provider as the gateway will use it. JWT: the discovery
 * document (`<issuer>/.well-known/openid-configuration`, unless `jwks_url` is set) and the key set,
 * with the gateway's own fetcher (`auth/jwks-http.ts`); introspection: one RFC 7662 call with the
 * configured client credentials and a token no server issued, which a working endpoint answers
 * `200 {"active":false}` and a wrong client secret `401`.
 */
import { Registry } from "prom-client";
import { IntrospectionClient } from "../../auth/introspection.js";
import { IssuerDocuments } from "../../auth/jwks-http.js";
import type { GatewayConfig } from "../../config/schema.js";
import { createMetrics } from "../../observability/metrics.js";
import { errorText, type ProbeResult } from "./probe.js";

/** The token the introspection call asks about: no server issued it. */
const DUMMY_TOKEN = "gateway-check-connect-dummy-token";

async function jwt(cfg: NonNullable<GatewayConfig["auth"]["jwt"]>): Promise<ProbeResult[]> {
  const docs = new IssuerDocuments(cfg.timeout_ms);
  const results: ProbeResult[] = [];
  try {
    let jwksUrl = cfg.jwks_url;
    if (jwksUrl === undefined) {
      const what = `discovery ${cfg.issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
      try {
        const found = await docs.discover(cfg.issuer);
        jwksUrl = found.jwksUri;
        const spelled = found.issuer === cfg.issuer ? "" : ` (spelt ${JSON.stringify(found.issuer)})`;
        results.push({ ok: true, what, answer: `names this issuer${spelled} and jwks_uri ${jwksUrl}` });
      } catch (err) {
        results.push({ ok: false, what, answer: errorText(err) });
        return results;
      }
    }
    try {
      const set = (await docs.getJson(jwksUrl, "JWKS")) as { keys?: { kid?: string }[] };
      const keys = Array.isArray(set.keys) ? set.keys : [];
      const kids = keys.map((k) => k.kid ?? "(no kid)").join(", ");
      results.push({
        ok: keys.length > 0,
        what: `JWKS ${jwksUrl}`,
        answer: keys.length > 0 ? `${keys.length} keys: ${kids}` : "no keys",
      });
    } catch (err) {
      results.push({ ok: false, what: `JWKS ${jwksUrl}`, answer: errorText(err) });
    }
    return results;
  } finally {
    await docs.close();
  }
}

async function introspection(cfg: NonNullable<GatewayConfig["auth"]["introspection"]>): Promise<ProbeResult> {
  const client = new IntrospectionClient({
    url: cfg.url,
    clientId: cfg.client_id,
    clientSecret: cfg.client_secret,
    timeoutMs: cfg.timeout_ms,
    metrics: createMetrics(new Registry(), "check"),
  });
  const what = `introspection ${cfg.url} as client ${cfg.client_id}, with a dummy token`;
  try {
    const info = await client.introspect(DUMMY_TOKEN);
    return info.active
      ? { ok: false, what, answer: "answered active: true for a token it never issued" }
      : { ok: true, what, answer: 'answered 200 {"active":false}: client credentials accepted' };
  } catch (err) {
    const answer = errorText(err);
    const hint = / 401$/.test(answer) ? " (client_id or client_secret refused)" : "";
    return { ok: false, what, answer: `${answer}${hint}` };
  } finally {
    await client.close();
  }
}

/** @returns one result per document or call tried; none for a static tokens file (checked as a file) */
export async function probeIdentityProvider(auth: GatewayConfig["auth"]): Promise<ProbeResult[]> {
  const [jwtResults, introspected] = await Promise.all([
    auth.jwt === undefined ? [] : jwt(auth.jwt),
    auth.introspection === undefined ? null : introspection(auth.introspection),
  ]);
  return introspected === null ? jwtResults : [...jwtResults, introspected];
}
