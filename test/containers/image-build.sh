#!/usr/bin/env bash
# Builds edge-operator:dev (or $IMAGE) from the shipped Dockerfile, on the Docker engine that
# answers (started here if needed), with the base image pulled or stood in (images.sh), writes
# its SBOM (CycloneDX JSON, by syft from test/controlplane/build.sh: glibc's Debian packages,
# Node, the bundled npm packages) to dist/sbom/edge-operator.cdx.json (or $SBOM), and prints
# the image's size and the application's (the bundle's) part of it.
# Usage: npm run image:build
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
image=${IMAGE:-edge-operator:dev}
sbom=${SBOM:-$root/dist/sbom/edge-operator.cdx.json}
"$root/test/containers/images.sh" base
# syft: built once (a few minutes on 2 cores), then cached
bin=$("$root/test/controlplane/build.sh" syft | tail -1) ||
  { echo "image-build.sh: syft, which writes the image's SBOM, could not be built (above)" >&2; exit 1; }
start=$SECONDS
# --network host: the build's `npm ci` reaches the registry the way this machine does
docker build --network host -t "$image" "$root" >&2
# earlier builds' leftovers (the build stage of each source change), keeping recent ones as cache
docker image prune -f --filter until=72h >/dev/null
size=$(docker image inspect -f '{{.Size}}' "$image")
# the SBOM, from the image as docker saves it (whatever engine or context the docker CLI
# reaches); syft asks no network (no update check, no image pull)
name=${image%:*} tag=${image##*:}
case $tag in */*) name=$image tag=latest ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
docker save -o "$tmp/image.tar" "$image"
mkdir -p "$(dirname "$sbom")"
SYFT_CHECK_FOR_APP_UPDATE=false "$bin/syft" scan -q "docker-archive:$tmp/image.tar" \
  --source-name "$name" --source-version "$tag" -o "cyclonedx-json=$sbom.tmp"
mv "$sbom.tmp" "$sbom"
app=$(docker run --rm --network none --entrypoint /usr/local/bin/node "$image" -p \
  "fs.readdirSync('/app').reduce((n, f) => n + fs.statSync('/app/' + f).size, 0)")
echo "image-build.sh: $image built in $((SECONDS - start)) s: $(awk -v b="$size" -v a="$app" \
  'BEGIN { printf "%.1f MB (%.1f MiB), of which the application %.1f MiB", b / 1e6, b / 1048576, a / 1048576 }')"
echo "image-build.sh: SBOM $sbom: $(node -p '
  const c = JSON.parse(fs.readFileSync(process.argv[1], "utf8")).components ?? [];
  const n = (t) => c.filter((x) => (x.purl ?? "").startsWith(`pkg:${t}/`)).length;
  `${c.length} components: ${n("deb")} Debian packages, ${n("npm")} npm packages`' "$sbom")"
