#!/usr/bin/env bash
# npm run test:container: builds the image from the repository's Dockerfile and runs it as a user
# would (issue 18), with podman (Debian's package) as root:
#   1. the local stand-in for NODE_IMAGE (base-image.sh; cached in podman's storage);
#   2. podman build --format docker --secret id=npmrc,... --build-arg NODE_IMAGE=<that> -t <image> .
#      (the Dockerfile as it is; the secret carries this machine's npm registry and CA settings);
#   3. run.ts, inside a network namespace made here, so that the containers, the upstream and
#      redis-server it starts share a loopback of their own and the image keeps ports 8080/9090.
# Fails loudly when podman cannot run a container here. Needs root (podman, debootstrap, ip netns).
set -euo pipefail
cd "$(dirname "$0")/../.."
here=test/container
export CONTAINERS_CONF="$PWD/$here/containers.conf"
image="${GATEWAY_IMAGE:-localhost/api-gateway:test}"

fail() {
  echo "test:container: FAILED: $*" >&2
  exit 1
}
[ "$(id -u)" -eq 0 ] || fail "needs root: rootful podman, debootstrap and a network namespace"
for cmd in podman runc debootstrap redis-server redis-cli ip nsenter; do
  command -v "$cmd" >/dev/null 2>&1 || fail "$cmd is missing (apt-get install podman runc debootstrap redis-server redis-tools iproute2)"
done
started=$SECONDS

base="$(timeout 1200 bash "$here/base-image.sh")" || fail "could not build the base image"
if ! timeout 120 podman run --rm --network none "$base" node -e 'process.exit(0)'; then
  fail "podman cannot run a container on this machine (settings: $CONTAINERS_CONF)"
fi

work="$(mktemp -d /tmp/gateway-container.XXXXXX)"
chmod 0755 "$work"
label="gwct$$"
netns="$label"
cleanup() {
  local ids
  ids="$(podman ps -aq --filter "label=gateway-container-test=$label" 2>/dev/null || true)"
  [ -z "$ids" ] || podman rm -f $ids >/dev/null 2>&1 || true
  ip netns del "$netns" 2>/dev/null || true
  rm -rf "$work"
  # Bounded storage: untagged images (those a build replaced, and the build stage's cache layers)
  # go once they are 6 h old; the base image and the newest image stay.
  podman image prune -f --filter until=6h >/dev/null 2>&1 || true
}
trap cleanup EXIT

# The host's npm configuration for the build's `npm ci`: its registry and, when it names a CA file,
# those certificates inline (the build cannot see the host's files). Nothing of it is in the repo.
npmrc="$work/npmrc"
(
  umask 077
  npm_get() { npm config get "$1" 2>/dev/null | grep -v -x -E 'null|undefined|' || true; }
  echo "registry=$(npm_get registry)"
  for key in strict-ssl proxy https-proxy noproxy; do
    value="$(npm_get "$key")"
    [ -z "$value" ] || echo "$key=$value"
  done
  cafile="$(npm_get cafile)"
  if [ -n "$cafile" ] && [ -f "$cafile" ]; then
    awk '/-----BEGIN CERTIFICATE-----/ { c = "" } { c = c $0 "\\n" } /-----END CERTIFICATE-----/ { print "ca[]=\"" c "\"" }' "$cafile"
  fi
) >"$npmrc"

echo "test:container: building $image on $base"
build=(podman build --format docker --secret "id=npmrc,src=$npmrc" --build-arg "NODE_IMAGE=$base" -t "$image" .)
echo "  \$ ${build[*]}"
build_started=$SECONDS
timeout 900 "${build[@]}" >"$work/build.log" 2>&1 || {
  tail -n 40 "$work/build.log" >&2
  fail "podman build failed"
}
echo "test:container: built in $((SECONDS - build_started)) s"

ip netns add "$netns"
ip -n "$netns" link set lo up
timeout 600 nsenter --net="/run/netns/$netns" env GATEWAY_IMAGE="$image" BASE_IMAGE="$base" \
  NETNS="/run/netns/$netns" RUN_LABEL="$label" WORK_DIR="$work" \
  node --import tsx "$here/run.ts" || fail "checks failed"
echo "test:container: passed in $((SECONDS - started)) s"
