#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, etcd; kube-controller-manager, kube-scheduler
# and kubelet for the node), helm, kustomize and actionlint for the packaging tests, and syft
# for the image's SBOM (test/containers/image-build.sh), from the Go modules beside this script
# into a cache outside the repo, keyed by version. Builds only what is missing.
# Usage: test/controlplane/build.sh [component...]   (prints the bin directory on its last line)
#   no component: all of them (EDGE_SKIP_PACKAGING_TOOLS=1: all but helm, kustomize, actionlint, syft);
#   e.g. `build.sh kube-apiserver etcd` for a control plane without a node (edgectl operator --local).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${EDGE_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-operator}
bin="$cache/bin"
mkdir -p "$bin"
components=(kube-apiserver etcd kube-controller-manager kube-scheduler kubelet helm kustomize actionlint syft)
if [ $# -gt 0 ]; then
  want=("$@")
elif [ -n "${EDGE_SKIP_PACKAGING_TOOLS:-}" ]; then
  want=("${components[@]:0:5}")
else
  want=("${components[@]}")
fi
for c in "${want[@]}"; do
  case " ${components[*]} " in *" $c "*) ;; *) echo "build.sh: no component $c (one of: ${components[*]})" >&2; exit 2 ;; esac
done
wants() { case " ${want[*]} " in *" $1 "*) return 0 ;; esac; return 1; }

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

# kube-apiserver and, for the node (edgectl cluster up --node, the node suite), the
# controllers and the kubelet: same module, same version
kube=(kube-apiserver kube-controller-manager kube-scheduler kubelet)
for c in "${kube[@]}"; do
  wants "$c" || continue
  if [ -z "${kver:-}" ]; then
    kver=$(modver kube k8s.io/kubernetes)
    kminor=$(echo "$kver" | cut -d. -f2)
    kv="-s -w"
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      kv="$kv -X $p.gitVersion=$kver -X $p.gitMajor=1 -X $p.gitMinor=$kminor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
    done
  fi
  build "$c" kube "k8s.io/kubernetes/cmd/$c" "$kver" "$kv"
  ln -sf "$c-$kver" "$bin/$c"
done

if wants etcd; then
  ever=$(modver etcd go.etcd.io/etcd/server/v3)
  build etcd etcd go.etcd.io/etcd/server/v3 "$ever" "-s -w"
  ln -sf "etcd-$ever" "$bin/etcd"
fi

# helm, kustomize and actionlint, for the packaging tests
if wants helm; then
  hver=$(modver helm helm.sh/helm/v3)
  # The Kubernetes version helm assumes without a cluster (helm template, helm lint): its
  # client-go's, as Helm's own Makefile stamps it. Unstamped it is 1.20, below the chart's
  # kubeVersion; the cache key names it, so a helm built without it is built again.
  cgo=$(modver helm k8s.io/client-go)
  cgo=${cgo#v}
  hkmajor=$(($(echo "$cgo" | cut -d. -f1) + 1))
  hkminor=$(echo "$cgo" | cut -d. -f2)
  hk=""
  for p in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    hk="$hk -X $p.k8sVersionMajor=$hkmajor -X $p.k8sVersionMinor=$hkminor"
  done
  build helm helm helm.sh/helm/v3/cmd/helm "$hver-k8s$hkmajor.$hkminor" "-s -w -X helm.sh/helm/v3/internal/version.version=$hver$hk"
  ln -sf "helm-$hver-k8s$hkmajor.$hkminor" "$bin/helm"
fi
if wants kustomize; then
  kzver=$(modver kustomize sigs.k8s.io/kustomize/kustomize/v5)
  build kustomize kustomize sigs.k8s.io/kustomize/kustomize/v5 "$kzver" "-s -w"
  ln -sf "kustomize-$kzver" "$bin/kustomize"
fi
if wants actionlint; then
  # for the release workflow's test
  alver=$(modver actionlint github.com/rhysd/actionlint)
  build actionlint actionlint github.com/rhysd/actionlint/cmd/actionlint "$alver" "-s -w"
  ln -sf "actionlint-$alver" "$bin/actionlint"
fi
if wants syft; then
  # the image's SBOM (test/containers/image-build.sh); stamped as syft's release build does, so
  # the SBOM names the tool's version (the update check is off where it runs: no network)
  sver=$(modver syft github.com/anchore/syft)
  build syft syft github.com/anchore/syft/cmd/syft "$sver" "-s -w -X main.version=${sver#v} -X main.buildDate=1970-01-01T00:00:00Z"
  ln -sf "syft-$sver" "$bin/syft"
fi
echo "$bin"
