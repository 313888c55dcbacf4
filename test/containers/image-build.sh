#!/usr/bin/env bash
# Builds edge-operator:dev (or $IMAGE) from the shipped Dockerfile, on the Docker engine that
# answers (started here if needed), with the base image pulled or stood in (images.sh), and
# prints the image's size and the size of the layers the Dockerfile adds to its base.
# Usage: npm run image:build
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
image=${IMAGE:-edge-operator:dev}
"$root/test/containers/images.sh" base
start=$SECONDS
# --network host: the build's `npm ci` reaches the registry the way this machine does
docker build --network host -t "$image" "$root" >&2
# earlier builds' leftovers (the build stage of each source change), keeping recent ones as cache
docker image prune -f --filter until=72h >/dev/null
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
base=$(sed -n 's/^FROM \([^ ]*\)$/\1/p' "$root/Dockerfile" | tail -1)
total=$(docker image inspect -f '{{.Size}}' "$image")
from=$(docker image inspect -f '{{.Size}}' "$base")
echo "image-build.sh: $image built in $((SECONDS - start)) s: $(mib "$total"), of which $(mib $((total - from))) on top of $base"
