#!/usr/bin/env bash
# Start a container engine for the release rehearsal, if this machine allows one.
# Prints the engine ("docker" or "podman") and then KEY=VALUE lines of environment to use it
# (DOCKER_HOST); exits 1 with the reason on stderr when none can run.
#   docker: Debian's docker.io, installed if missing (root, apt-get), dockerd started by hand
#           with its state under STATE_DIR (no systemd on these machines)
#   podman: tried when docker cannot start
# Usage: ci/dev/container-engine.sh STATE_DIR [stop]   (stop: end a dockerd this script started)
set -uo pipefail
state=${1:?usage: container-engine.sh STATE_DIR [stop]}
mkdir -p "$state"
log() { echo "container-engine: $*" >&2; }

if [ "${2:-}" = stop ]; then
  if [ -f "$state/dockerd.pid" ]; then
    pid=$(cat "$state/dockerd.pid")
    kill "$pid" 2>/dev/null && log "stopping dockerd"
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    rm -f "$state/dockerd.pid"
  fi
  # dockerd leaves its network namespace mounted; release it so the state folder can be removed.
  awk -v s="$state/" 'index($2, s) == 1 {print $2}' /proc/mounts | sort -r | xargs -r -n1 umount 2>/dev/null
  exit 0
fi

if docker info >/dev/null 2>&1; then echo docker; exit 0; fi

install_packages() {
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || return 1
  log "installing $* with apt-get"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >"$state/apt.log" 2>&1 \
    || { apt-get update -qq >>"$state/apt.log" 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >>"$state/apt.log" 2>&1; }
}

command -v debootstrap >/dev/null || install_packages debootstrap \
  || { log "debootstrap is missing and cannot be installed (the stand-in image needs it)"; exit 1; }

if command -v dockerd >/dev/null || install_packages docker.io; then
  sock=$state/docker.sock
  if [ ! -S "$sock" ] || ! DOCKER_HOST=unix://$sock docker info >/dev/null 2>&1; then
    log "starting dockerd (state in $state)"
    nohup dockerd --data-root "$state/data" --exec-root "$state/exec" --pidfile "$state/dockerd.pid" \
      -H "unix://$sock" >"$state/dockerd.log" 2>&1 &
    for _ in $(seq 60); do
      DOCKER_HOST=unix://$sock docker info >/dev/null 2>&1 && break
      sleep 1
    done
  fi
  if DOCKER_HOST=unix://$sock docker info >/dev/null 2>&1; then
    echo docker
    echo "DOCKER_HOST=unix://$sock"
    exit 0
  fi
  log "dockerd did not start: $(tail -n 3 "$state/dockerd.log" 2>/dev/null | tr '\n' ' ')"
fi

if command -v podman >/dev/null && podman info >/dev/null 2>&1; then
  echo podman
  exit 0
fi
log "no container engine can run here (docker did not start, podman is not usable)"
exit 1
