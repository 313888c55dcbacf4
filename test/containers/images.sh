#!/usr/bin/env bash
# Makes the images the image build and the container tests use, under their upstream names:
#   base          node:<.nvmrc>-slim                     (the Dockerfile's FROM)
#   controlplane  registry.k8s.io/kube-apiserver:<ver>, registry.k8s.io/etcd:<ver>-0
# Each is used if present, else pulled, else (no registry reachable) built locally as a
# stand-in: the Node base from a debootstrap'd Debian minbase plus the Node binary of the npm
# package node@<major> and npm; the control plane FROM scratch with the static binaries that
# test/controlplane/build.sh builds. Stand-ins carry the label edge.tunnel.dev/stand-in=true.
# Usage: test/containers/images.sh [base] [controlplane]   (both when none given)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${EDGE_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-operator}
mkdir -p "$cache/images"
"$root/test/containers/engine.sh"

have() { docker image inspect "$1" >/dev/null 2>&1; }
pull() { timeout 300 docker pull -q "$1" >/dev/null 2>&1; }
say() { echo "images.sh: $*" >&2; }
# docker build, its output (and the legacy builder's deprecation notice) shown only on failure
build() {
  local out
  out=$(docker build -q "$@" 2>&1) || { echo "$out" >&2; return 1; }
}
gomod() { awk -v m="$2" '$1 == m { print $2 }' "$root/test/controlplane/$1/go.mod"; }

base() {
  local major image
  major=$(tr -d 'v \n' <"$root/.nvmrc")
  image="node:$major-slim"
  if have "$image" || pull "$image"; then say "$image ready"; return; fi
  say "$image cannot be pulled: building a local stand-in"
  local rootfs="$cache/images/debian-bookworm-minbase.tar" ctx
  if [ ! -s "$rootfs" ]; then
    command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null
    local mirror tmp
    # the mirror apt already uses (deb822 URIs: lines or one-line deb entries, not comments)
    mirror=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list /etc/apt/sources.list 2>/dev/null |
      grep -E '^(URIs:|deb )' | grep -oE 'https?://[^ ]+/debian/?( |$)' | head -1 | tr -d ' ' || true)
    if [ -z "$mirror" ]; then
      echo "images.sh: apt has no Debian mirror configured (no .../debian URI in /etc/apt/sources.list or sources.list.d): add the machine's mirror there, or make node:$major-slim available to docker" >&2
      exit 1
    fi
    tmp=$(mktemp -d)
    say "debootstrap --variant=minbase bookworm from $mirror, apt's own mirror (about a minute)"
    debootstrap --variant=minbase bookworm "$tmp/rootfs" "$mirror" >"$cache/images/debootstrap.log" 2>&1
    rm -rf "$tmp/rootfs"/var/cache/apt/archives/*.deb "$tmp/rootfs"/var/lib/apt/lists/*
    tar -C "$tmp/rootfs" -c . >"$rootfs.tmp" && mv "$rootfs.tmp" "$rootfs"
    rm -rf "$tmp"
  fi
  have edge-operator/debian-minbase:bookworm || docker import "$rootfs" edge-operator/debian-minbase:bookworm >/dev/null
  local tools="$cache/images/node$major"
  if [ ! -x "$tools/node_modules/node/bin/node" ] || [ ! -d "$tools/node_modules/npm" ]; then
    say "fetching node@$major and npm from the npm registry"
    mkdir -p "$tools"
    (cd "$tools" && npm install --no-save --no-audit --no-fund --loglevel=error "node@$major" npm@11 >/dev/null)
  fi
  ctx=$(mktemp -d)
  cp -L "$tools/node_modules/node/bin/node" "$ctx/node"
  cp -r "$tools/node_modules/npm" "$ctx/npm"
  # the machine's TLS trust, so `npm ci` in a build stage reaches the registry through its proxy
  cp "${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}" "$ctx/ca-certificates.crt"
  cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM edge-operator/debian-minbase:bookworm
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
LABEL edge.tunnel.dev/stand-in=true
CMD ["node"]
DOCKERFILE
  build --network host -t "$image" "$ctx"
  rm -rf "$ctx"
  say "$image stand-in built ($(docker run --rm --network host "$image" node --version))"
}

scratch_image() { # image binary path-in-image
  local image=$1 bin=$2 path=$3
  if have "$image" || pull "$image"; then say "$image ready"; return; fi
  [ -x "$bin" ] || { say "$bin is missing: run test/controlplane/build.sh first"; exit 1; }
  local ctx
  ctx=$(mktemp -d)
  cp -L "$bin" "$ctx/bin"
  printf 'FROM scratch\nCOPY bin %s\nLABEL edge.tunnel.dev/stand-in=true\nENTRYPOINT ["%s"]\n' "$path" "$path" >"$ctx/Dockerfile"
  build -t "$image" "$ctx"
  rm -rf "$ctx"
  say "$image stand-in built FROM scratch"
}

controlplane() {
  local kver ever
  kver=$(gomod kube k8s.io/kubernetes)
  ever=$(gomod etcd go.etcd.io/etcd/server/v3)
  "$root/test/controlplane/build.sh" kube-apiserver etcd >/dev/null
  scratch_image "registry.k8s.io/kube-apiserver:$kver" "$cache/bin/kube-apiserver-$kver" /usr/local/bin/kube-apiserver
  scratch_image "registry.k8s.io/etcd:${ever#v}-0" "$cache/bin/etcd-$ever" /usr/local/bin/etcd
}

[ $# -gt 0 ] || set -- base controlplane
for what in "$@"; do
  case $what in
  base | controlplane) "$what" ;;
  *) echo "images.sh: unknown image set '$what' (base, controlplane)" >&2; exit 2 ;;
  esac
done
