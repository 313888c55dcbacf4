#!/usr/bin/env bash
# What the local node runs pods with: containerd, runc and the CNI plugins from Debian's
# packages (installed when missing), and the sandbox ("pause") image built here from
# test/node/pause, saved as an image archive the node imports at start (nothing is pulled).
# Needs root and a Docker engine (test/containers/engine.sh) for the image build.
# Usage: test/node/runtime.sh   (prints the pause image archive on its last line)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${EDGE_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-operator}
say() { echo "runtime.sh: $*" >&2; }
if [ "$(id -u)" != 0 ]; then
  say "a node needs root (containerd, kubelet, network devices): run sudo $0"
  exit 1
fi

missing=()
command -v containerd >/dev/null || missing+=(containerd)
command -v runc >/dev/null || missing+=(runc)
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
command -v iptables >/dev/null || missing+=(iptables)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian's ${missing[*]}..."
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 || {
    apt-get update -q >/dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
  }
fi

# the pause image, keyed by the hash of its source
hash=$(cat "$here/pause/main.go" "$here/pause/go.mod" | sha256sum | cut -c1-12)
archive="$cache/images/pause-$hash.tar"
if [ ! -s "$archive" ]; then
  command -v go >/dev/null || { say "Go is not installed: the pause image cannot be built"; exit 3; }
  "$root/test/containers/engine.sh"
  ctx=$(mktemp -d)
  (cd "$here/pause" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$ctx/pause" .)
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$ctx/Dockerfile"
  mkdir -p "$cache/images"
  out=$(docker build -q -t "edge.local/pause:$hash" "$ctx" 2>&1) || { echo "$out" >&2; exit 1; }
  docker save "edge.local/pause:$hash" -o "$archive.tmp" && mv "$archive.tmp" "$archive"
  rm -rf "$ctx"
  say "pause image edge.local/pause:$hash built"
fi
echo "$archive"
