#!/usr/bin/env bash
# Builds edge-operator:dev (or $IMAGE) from the shipped Dockerfile, on the Docker engine that
# answers (started here if needed), with the base image pulled or stood in (images.sh), and
# prints the image's size and the application's (the bundle's) part of it.
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
size=$(docker image inspect -f '{{.Size}}' "$image")
app=$(docker run --rm --network none --entrypoint /usr/local/bin/node "$image" -p \
  "fs.readdirSync('/app').reduce((n, f) => n + fs.statSync('/app/' + f).size, 0)")
echo "image-build.sh: $image built in $((SECONDS - start)) s: $(awk -v b="$size" -v a="$app" \
  'BEGIN { printf "%.1f MB (%.1f MiB), of which the application %.1f MiB", b / 1e6, b / 1048576, a / 1048576 }')"
