#!/usr/bin/env bash
# Make what `make smoke` needs on a Debian/Ubuntu host available: a running
# Docker engine, compose v2, and debootstrap (hosts that cannot pull the smoke
# image's Debian base make it from their apt mirror). Idempotent: safe to run
# on a machine that already has some or all of it.
#
# The engine is the distribution's docker.io (bookworm: 20.10), enough for the
# smoke; the GPU stacks need Engine 25 or later (their healthchecks' start_interval;
# compose refuses it on older engines), which `pdrepro doctor` checks on GPU nodes.
#
# Debian bookworm ships docker.io (the engine) but no compose v2 plugin; trixie's
# `docker-compose` package has it. Trixie is added with a low pin priority so
# nothing else on the machine moves to it.
set -euo pipefail

log() { printf 'docker-engine: %s\n' "$*" >&2; }

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    log "must run as root (installs packages, starts dockerd)"; exit 2
  fi
}

apt_updated=0
apt_update_once() {
  if [ "$apt_updated" -eq 0 ]; then apt-get update -qq; apt_updated=1; fi
}

install_engine() {
  if command -v dockerd >/dev/null 2>&1; then return; fi
  need_root
  log "installing docker.io"
  apt_update_once
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    docker.io iptables ca-certificates >/dev/null
}

have_compose() {
  docker compose version >/dev/null 2>&1 || docker-compose version >/dev/null 2>&1
}

install_compose() {
  if have_compose; then return; fi
  need_root
  local mirror
  # The mirror the host already uses for Debian, so no registry host is hard-coded.
  mirror=$(bash "$(dirname "$0")/../docker/debian-mirror.sh") || {
    log "no Debian mirror found in the apt sources"; exit 2; }
  log "installing compose v2 from trixie (mirror $mirror, pinned low)"
  if [ ! -f /etc/apt/sources.list.d/trixie-compose.sources ]; then
    cat > /etc/apt/sources.list.d/trixie-compose.sources <<SRC
Types: deb
URIs: $mirror
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  cat > /etc/apt/preferences.d/trixie-compose <<'PIN'
Package: *
Pin: release n=trixie
Pin-Priority: 100
PIN
  apt_updated=0
  apt_update_once
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    -t trixie docker-compose >/dev/null
}

start_daemon() {
  if docker info >/dev/null 2>&1; then return; fi
  need_root
  log "starting dockerd in the background (log: /var/log/dockerd.log)"
  # Its own session: a signal sent to the caller's process group (Ctrl-C, a job
  # runner's kill) must not take the engine down with it.
  setsid nohup dockerd >/var/log/dockerd.log 2>&1 < /dev/null &
  local _
  for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then return; fi
    sleep 1
  done
  log "dockerd did not become ready in 60 s; last log lines:"
  tail -n 20 /var/log/dockerd.log >&2 || true
  exit 1
}

install_debootstrap() {
  if command -v debootstrap >/dev/null 2>&1; then return; fi
  need_root
  log "installing debootstrap (the smoke base on hosts without an image registry)"
  apt_update_once
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
}

install_engine
start_daemon
install_compose
install_debootstrap

docker version --format 'docker-engine: client {{.Client.Version}}, server {{.Server.Version}}' >&2
server=$(docker version --format '{{.Server.Version}}')
if [ "${server%%.*}" -lt 25 ] 2>/dev/null; then
  log "engine $server: enough for make smoke; the GPU stacks need Engine 25 or later (Docker's own docker-ce packages)"
fi
if docker compose version >/dev/null 2>&1; then
  log "compose: $(docker compose version --short 2>/dev/null || docker compose version) (plugin: docker compose)"
else
  log "compose: $(docker-compose version --short 2>/dev/null || docker-compose version) (standalone: docker-compose)"
fi
