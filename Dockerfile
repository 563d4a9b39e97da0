# syntax=docker/dockerfile:1
#
# API gateway container (SPEC §9, README "Deploying").
#   docker build -t api-gateway .                      # podman: podman build --format docker ...
#   docker run --rm -p 8080:8080 -p 9090:9090 \
#     -v "$PWD/gateway.yaml:/etc/gateway/gateway.yaml:ro" -e INTROSPECTION_CLIENT_SECRET=... api-gateway
# Behind a private registry or a TLS-intercepting proxy, hand the build your npm configuration:
#   docker build --secret id=npmrc,src=$HOME/.npmrc -t api-gateway .
# `--build-arg NODE_IMAGE=...` swaps the base (test/container builds an equivalent one locally).
# npm run test:container builds this file as it is and runs the image (test/container/run.sh).
#
# Two stages: `build` has the dev dependencies and compiles TypeScript to dist/; the runtime stage
# has only the production dependencies, the compiled output and the example configs, and runs as the
# unprivileged `node` user (uid 1000) that the official image provides.
# test/repository/deployment-artifacts.test.ts checks the points the deployment relies on.

# Node 22 LTS (README "Performance", The runtime; issue 29): measured against Node 20 and 24 with
# BENCH_NODES, it does Node 20's instructions per request with the same young generation, promotes
# a sixth as many bytes per request (what the collector's pauses copy) and holds the least RSS;
# Node 24 served most at saturation but doubles the young generation (longer pauses, twice the
# RSS). The wall-clock tail did not settle it on a shared machine. Measured again on 2026-11-28
# (instructions per request on 20, 22 and 24.21): Node 22 still does the least work. engines and
# npm test stay on Node 20; CI also runs the request-path tests on Node 22 and 24
# (test/runtime/image-node.sh). Move before Node 22's maintenance ends (2027-04-30).
ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
# --ignore-scripts: `prepare` runs the build, which needs the sources copied below.
# The optional `npmrc` build secret is the builder's own npm configuration (a private registry or
# mirror, its CA, a token): mounted as root's ~/.npmrc for this one command, so no layer keeps it.
RUN --mount=type=secret,id=npmrc,target=/root/.npmrc npm ci --ignore-scripts
COPY . .
RUN npm run build \
 && mkdir -p /etc/gateway \
 && if [ -f config/gateway.example.yaml ]; then cp config/gateway.example.yaml /etc/gateway/gateway.yaml; fi

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    GATEWAY_CONFIG=/etc/gateway/gateway.yaml
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
# --ignore-scripts: `prepare` would run tsc, which is a dev dependency and not installed here.
RUN --mount=type=secret,id=npmrc,target=/root/.npmrc npm ci --omit=dev --ignore-scripts \
 && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY --from=build /app/config ./config
# Default configuration (the example, when present); mount your own file or a ConfigMap over it.
COPY --from=build /etc/gateway /etc/gateway

USER node
# 8080: API listener (`listen`); 8081: decision listener (`decision.listen`, when configured: for the
# edge proxy only); 9090: admin listener (`admin`: /metrics, /healthz, /readyz).
EXPOSE 8080 8081 9090
# slim images have no curl: ask node. /healthz answers while the process is alive (SPEC §8).
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:9090/healthz',{signal:AbortSignal.timeout(2000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# The gateway drains on SIGTERM within listen.grace_ms, then exits 0.
STOPSIGNAL SIGTERM
CMD ["node", "dist/gateway/main.js", "start", "--config", "/etc/gateway/gateway.yaml"]
