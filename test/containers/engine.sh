#!/usr/bin/env bash
# Makes sure a Docker engine answers: the one DOCKER_HOST or the default socket names, or else
# Debian's docker.io, installed if missing and started without iptables or a bridge (containers
# here use the host network only). Quick and silent when an engine is already up.
# Usage: test/containers/engine.sh   (exit 0: `docker info` answers)
set -euo pipefail
cache=${EDGE_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-operator}

up() { docker info >/dev/null 2>&1; }
command -v docker >/dev/null && up && exit 0
if [ -n "${DOCKER_HOST:-}" ]; then
  echo "engine.sh: DOCKER_HOST=$DOCKER_HOST does not answer (docker info failed)" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "engine.sh: no Docker engine answers, and installing or starting one needs root: start Docker, or run sudo $0" >&2
  exit 1
fi
if ! command -v dockerd >/dev/null || ! command -v docker >/dev/null; then
  echo "engine.sh: installing Debian's docker.io..." >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io >/dev/null 2>&1 || {
    apt-get update -q >/dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io >/dev/null
  }
fi
mkdir -p "$cache"
# a dockerd (and its containerd) killed with the session leaves pid files behind, and a new
# dockerd refuses to start while they name no live process
for pidfile in /var/run/docker.pid /var/run/docker/containerd/containerd.pid; do
  if [ -f "$pidfile" ] && ! kill -0 "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null; then rm -f "$pidfile"; fi
done
echo "engine.sh: starting dockerd (log: $cache/dockerd.log)" >&2
# without the caller's other descriptors: a lock held by whoever ran this (flock) must not
# live on in a daemon that outlives the run
(
  for fd in $(ls /proc/$BASHPID/fd); do [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done
  exec nohup dockerd --iptables=false --bridge=none --log-level=warn >"$cache/dockerd.log" 2>&1
) &
pid=$!
for _ in $(seq 1 150); do
  up && exit 0
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.2
done
echo "engine.sh: dockerd did not answer within 30 s; last lines of $cache/dockerd.log:" >&2
tail -5 "$cache/dockerd.log" >&2
exit 1
