/**
 * SPEC §23: a request on the decision listener describes another request, in the convention of the
 * edge proxy that sends it. Each case sends exactly what that proxy sends:
 *
 * - Traefik `forwardAuth` (doc.traefik.io/traefik/middlewares/http/forwardauth/): a GET to the
 *   configured address carrying the client's headers and `X-Forwarded-Method`,
 *   `X-Forwarded-Proto`, `X-Forwarded-Host`, `X-Forwarded-Uri`, `X-Forwarded-For`;
 * - nginx `auth_request` (nginx.org/en/docs/http/ngx_http_auth_request_module.html): a subrequest
 *   (GET) to the auth location, whose configuration sets `X-Original-URI $request_uri` (the
 *   module's documented example) and here `X-Original-Method $request_method`;
 * - Envoy `ext_authz` HTTP service with `path_prefix`
 *   (envoyproxy.io/docs/envoy/latest/api-v3/extensions/filters/http/ext_authz/v3/ext_authz.proto):
 *   the original method, the path `path_prefix` + the original path (and query), and the allowed
 *   headers (`Authorization` among them by default).
 *
 * The described request is routed, classified and counted as on the API listener: the answer's
 * `X-RateLimit-Resource` names the class its method and path pick.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { request } from "../helpers/http.js";

let gw: TestGateway;

beforeAll(async () => {
  // The upstream is never called: nothing listens on its port.
  gw = await startGateway(
    testConfig("http://127.0.0.1:1", { decision: { listen: { host: "127.0.0.1", port: 0 } } }),
  );
});

afterAll(async () => {
  await gw.close();
});

const bearer = { authorization: "Bearer valid-token" };

describe("Traefik forwardAuth", () => {
  it("describes the request by X-Forwarded-Method and X-Forwarded-Uri", async () => {
    const res = await request(`${gw.decisionUrl}/decide`, {
      headers: {
        ...bearer,
        "x-forwarded-method": "POST",
        "x-forwarded-proto": "https",
        "x-forwarded-host": "api.example.com",
        "x-forwarded-uri": "/v1/spaces/handbook/pages?draft=1",
        "x-forwarded-for": "203.0.113.7",
      },
    });
    expect(res.status).toBe(200);
    expect(res.body).toBe("");
    expect(res.headers["x-ratelimit-resource"]).toBe("write");
    expect(res.headers["x-ratelimit-limit"]).toBe("3");
    expect(res.headers["x-auth-subject"]).toBe("alice");
  });

  it("classifies the described path, not the decision path", async () => {
    const res = await request(`${gw.decisionUrl}/decide`, {
      headers: { ...bearer, "x-forwarded-method": "GET", "x-forwarded-uri": "/v1/search?q=x" },
    });
    expect(res.status).toBe(200);
    expect(res.headers["x-ratelimit-resource"]).toBe("search");
  });
});

describe("nginx auth_request", () => {
  it("describes the request by X-Original-Method and X-Original-URI (the subrequest is a GET)", async () => {
    const res = await request(`${gw.decisionUrl}/decide`, {
      headers: { ...bearer, "x-original-method": "DELETE", "x-original-uri": "/v1/spaces/old" },
    });
    expect(res.status).toBe(200);
    expect(res.headers["x-ratelimit-resource"]).toBe("write");
  });

  it("without X-Original-Method, takes the subrequest's own method", async () => {
    const res = await request(`${gw.decisionUrl}/decide`, {
      headers: { ...bearer, "x-original-uri": "/v1/user" },
    });
    expect(res.headers["x-ratelimit-resource"]).toBe("read");
  });

  it("normalises the described URI as the API listener does (no dodging a class)", async () => {
    const res = await request(`${gw.decisionUrl}/decide`, {
      headers: { ...bearer, "x-original-method": "GET", "x-original-uri": "/v1/x/../%73earch" },
    });
    expect(res.headers["x-ratelimit-resource"]).toBe("search");
  });

  it("Traefik's fields win over nginx's when both are present (SPEC order)", async () => {
    const res = await request(`${gw.decisionUrl}/decide`, {
      headers: {
        ...bearer,
        "x-forwarded-method": "GET",
        "x-forwarded-uri": "/v1/search",
        "x-original-method": "POST",
        "x-original-uri": "/v1/pages",
      },
    });
    expect(res.headers["x-ratelimit-resource"]).toBe("search");
  });
});

describe("Envoy ext_authz with path_prefix", () => {
  it("describes the request by its own method and the path below decision.path", async () => {
    const res = await request(`${gw.decisionUrl}/decide/v1/spaces/handbook/pages?draft=1`, {
      method: "PUT",
      headers: { ...bearer, "x-forwarded-proto": "https", "content-length": "0" },
    });
    expect(res.status).toBe(200);
    expect(res.headers["x-ratelimit-resource"]).toBe("write");
    expect(res.headers["x-auth-scope"]).toBe("read write");
  });

  it("routes the path below decision.path: /decide/v2 matches no route (404)", async () => {
    const res = await request(`${gw.decisionUrl}/decide/v2/user`, { headers: bearer });
    expect(res.status).toBe(404);
    expect(res.headers["x-gateway-status"]).toBe("404");
    expect(res.headers["x-ratelimit-resource"]).toBe("anonymous");
  });
});

describe("the decision listener's own paths", () => {
  it("answers 404 to a path that is not decision.path nor below it, deciding nothing", async () => {
    for (const path of ["/v1/user", "/decider", "/"]) {
      const res = await request(`${gw.decisionUrl}${path}`, {
        headers: { ...bearer, "x-original-uri": "/v1/user" },
      });
      expect(res.status).toBe(404);
      expect(res.headers["x-ratelimit-limit"]).toBeUndefined();
      expect(JSON.parse(res.body)).toEqual({ error: { code: 404, message: "Not found" } });
    }
  });

  it("is not the API listener: /rate_limit described is routed like any path", async () => {
    const res = await request(`${gw.decisionUrl}/decide`, {
      headers: { ...bearer, "x-original-method": "GET", "x-original-uri": "/rate_limit" },
    });
    expect(res.status).toBe(404);
    expect(res.body).toBe('{"error":{"code":404,"message":"Not found"}}');
  });
});
