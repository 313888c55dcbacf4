#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, etcd; kube-controller-manager, kube-scheduler
# and kubelet for the node), and helm and kustomize for the
# packaging tests, from the Go modules beside this script into a cache outside the repo,
# keyed by version. Builds only what is missing.
# Usage: test/controlplane/build.sh   (prints the bin directory on its last line)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${EDGE_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-operator}
bin="$cache/bin"
mkdir -p "$bin"
command -v go >/dev/null || { echo "build.sh: Go is not installed; the control plane cannot be built" >&2; exit 3; }

modver() { (cd "$here/$1" && go list -m -f '{{.Version}}' "$2"); }

build() { # name module-dir package version ldflags
  local name=$1 dir=$2 pkg=$3 ver=$4 ldflags=$5 out="$bin/$1-$4"
  if [ -x "$out" ]; then echo "build.sh: $name $ver cached at $out" >&2; return; fi
  echo "build.sh: building $name $ver (minutes on 2 cores)..." >&2
  local start=$SECONDS
  (cd "$here/$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$out.tmp" "$pkg") &
  local pid=$!
  # a heartbeat, so minutes of compiling do not look like a hang
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if [ $(((SECONDS - start) % 30)) -eq 0 ]; then echo "build.sh: still building $name ($((SECONDS - start))s)" >&2; fi
  done
  wait "$pid"
  mv "$out.tmp" "$out"
  echo "build.sh: built $name $ver in $((SECONDS - start))s" >&2
}

kver=$(modver kube k8s.io/kubernetes)
kminor=$(echo "$kver" | cut -d. -f2)
kv="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kv="$kv -X $p.gitVersion=$kver -X $p.gitMajor=1 -X $p.gitMinor=$kminor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
build kube-apiserver kube k8s.io/kubernetes/cmd/kube-apiserver "$kver" "$kv"
# the node (edgectl cluster up --node, the node suite): same module, same version
for c in kube-controller-manager kube-scheduler kubelet; do
  build "$c" kube "k8s.io/kubernetes/cmd/$c" "$kver" "$kv"
done

ever=$(modver etcd go.etcd.io/etcd/server/v3)
build etcd etcd go.etcd.io/etcd/server/v3 "$ever" "-s -w"

for c in kube-apiserver kube-controller-manager kube-scheduler kubelet; do ln -sf "$c-$kver" "$bin/$c"; done
ln -sf "etcd-$ever" "$bin/etcd"

# helm, kustomize and actionlint, for the packaging tests (EDGE_SKIP_PACKAGING_TOOLS=1 skips them)
if [ -z "${EDGE_SKIP_PACKAGING_TOOLS:-}" ]; then
  hver=$(modver helm helm.sh/helm/v3)
  build helm helm helm.sh/helm/v3/cmd/helm "$hver" "-s -w -X helm.sh/helm/v3/internal/version.version=$hver"
  kzver=$(modver kustomize sigs.k8s.io/kustomize/kustomize/v5)
  build kustomize kustomize sigs.k8s.io/kustomize/kustomize/v5 "$kzver" "-s -w"
  ln -sf "helm-$hver" "$bin/helm"
  ln -sf "kustomize-$kzver" "$bin/kustomize"
  # actionlint, for the release workflow's test
  alver=$(modver actionlint github.com/rhysd/actionlint)
  build actionlint actionlint github.com/rhysd/actionlint/cmd/actionlint "$alver" "-s -w"
  ln -sf "actionlint-$alver" "$bin/actionlint"
fi
echo "$bin"
