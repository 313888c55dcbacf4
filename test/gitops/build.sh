#!/usr/bin/env bash
# Builds what the gitops suite runs beside the test control plane: Flux's source-controller and
# kustomize-controller, and Argo CD (one binary; argocd-application-controller and
# argocd-repo-server are links to it, it dispatches on its name), from the versions pinned in
# test/gitops/{flux,argocd}/go.mod. Their modules replace local directories (./api), so
# `go install pkg@version` is refused: each module is downloaded (checked against the pin's
# go.sum), copied to a writable directory under the cache and built inside it. Only what is
# missing is built, keyed by version; the CRDs of each release are copied beside the binaries.
# Redis (Argo CD's cache) comes from Debian: `apt-get install redis-server` (.ci/run does it).
# Usage: test/gitops/build.sh [flux|argocd]   (both by default; prints the bin directory on its last line)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${EDGE_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-operator}
bin="$cache/bin"
src="$cache/src"
mkdir -p "$bin" "$src"
only=${1:-}
command -v go >/dev/null || { echo "gitops build.sh: Go is not installed; Flux and Argo CD cannot be built" >&2; exit 3; }

# the version a pin module requires (from its go.mod, no network)
pinned() { sed -e 's/^require //' "$here/$1/go.mod" | awk -v m="$2" '$1 == m { print $2; found = 1 } END { exit !found }'; }

# a writable copy of module@version in $src (downloaded through the pin module, so go.sum checks it)
unpack() { # pin-dir module version name -> prints the copy's directory
  local dir="$src/$4-$3"
  if [ ! -f "$dir/.complete" ]; then
    local from
    from=$(cd "$here/$1" && GOFLAGS=-mod=readonly go mod download -json "$2@$3" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
    [ -d "$from" ] || { echo "gitops build.sh: could not download $2@$3" >&2; exit 1; }
    rm -rf "$dir"
    cp -r "$from" "$dir"
    chmod -R u+w "$dir"
    touch "$dir/.complete"
  fi
  echo "$dir"
}

build() { # name dir package version ldflags
  local name=$1 dir=$2 pkg=$3 ver=$4 ldflags=$5 out="$bin/$1-$4"
  if [ -x "$out" ]; then echo "gitops build.sh: $name $ver cached at $out" >&2; return; fi
  echo "gitops build.sh: building $name $ver (minutes on 2 cores)..." >&2
  local start=$SECONDS
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$out.tmp" "$pkg") &
  local pid=$! next=$((SECONDS + 30))
  # a heartbeat, so minutes of compiling do not look like a hang
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if [ "$SECONDS" -ge "$next" ]; then
      echo "gitops build.sh: still building $name ($((SECONDS - start))s)" >&2
      next=$((next + 30))
    fi
  done
  wait "$pid"
  mv "$out.tmp" "$out"
  echo "gitops build.sh: built $name $ver in $((SECONDS - start))s" >&2
}

crds() { # name version from-dir: the release's CRDs beside the binaries
  local out="$bin/$1-$2-crds"
  if [ -d "$out" ]; then return; fi
  mkdir -p "$out.tmp"
  cp "$3"/*.yaml "$out.tmp/"
  rm -f "$out.tmp/kustomization.yaml"
  mv "$out.tmp" "$out"
}

# Flux: source-controller and kustomize-controller (the api module of the same version replaces ./api)
[ "$only" = argocd ] || for c in source-controller kustomize-controller; do
  m=github.com/fluxcd/$c
  v=$(pinned flux "$m")
  if [ ! -x "$bin/$c-$v" ] || [ ! -d "$bin/$c-$v-crds" ]; then
    d=$(unpack flux "$m" "$v" "$c")
    (cd "$d" && go mod edit -dropreplace="$m/api")
    # source-controller v1.9.6 requires github.com/fluxcd/pkg/artifact v0.18.3, whose zip the module
    # proxy refuses (403, as for v0.18.2); v0.18.1 is the nearest release it serves
    if [ "$c" = source-controller ]; then
      (cd "$d" && go mod edit -replace=github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@v0.18.1)
    fi
    build "$c" "$d" . "$v" "-s -w"
    crds "$c" "$v" "$d/config/crd/bases"
  fi
  ln -sfn "$c-$v" "$bin/$c"
  ln -sfn "$c-$v-crds" "$bin/$c-crds"
done

# Argo CD: its go.mod has only remote replaces at this version; building inside the copy applies them
if [ "$only" != flux ]; then
m=github.com/argoproj/argo-cd/v3
v=$(pinned argocd "$m")
if [ ! -x "$bin/argocd-$v" ] || [ ! -d "$bin/argocd-$v-crds" ]; then
  d=$(unpack argocd "$m" "$v" argocd)
  p=github.com/argoproj/argo-cd/v3/common
  # the version as its Makefile stamps it (the commit is not known from the module: `argocd version` says +unknown)
  build argocd "$d" ./cmd "$v" "-s -w -X $p.version=${v#v} -X $p.gitTreeState=clean"
  crds argocd "$v" "$d/manifests/crds"
fi
ln -sfn "argocd-$v" "$bin/argocd"
ln -sfn "argocd-$v-crds" "$bin/argocd-crds"
for c in argocd-application-controller argocd-repo-server; do ln -sfn "argocd-$v" "$bin/$c"; done
fi
echo "$bin"
