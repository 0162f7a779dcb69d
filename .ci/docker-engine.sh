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
# nothing else on the machine moves to it, unless the apt sources list it already.
#
# Run it as root, or as a user with sudo: it asks for root (re-running itself
# through sudo) only when something is missing. When it starts dockerd itself it
# raises the locked-memory limit first, since containers cannot lock more than an
# engine without CAP_SYS_RESOURCE has. DOCKERD_LOG: where that dockerd logs.
set -euo pipefail

log() { printf 'docker-engine: %s\n' "$*" >&2; }

DOCKERD_LOG=${DOCKERD_LOG:-/var/log/dockerd.log}
SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")

# Root for what is missing: as root, go on; with sudo, run the whole script again
# through it (every step is idempotent, so the steps already done are skipped).
need_root() {
  if [ "$(id -u)" -eq 0 ]; then return; fi
  if command -v sudo >/dev/null 2>&1; then
    log "$1 needs root: running again through sudo"
    exec sudo -- bash "$SELF" "${ARGS[@]}"
  fi
  log "$1 needs root, and there is no sudo: run it as root (bash $SELF)"; exit 2
}

# Every "URI SUITE" pair the apt sources under DIR list, in both formats (one-line
# .list and deb822 .sources); disabled stanzas and comments are left out.
apt_suites() {
  local dir=$1 f
  for f in "$dir"/sources.list "$dir"/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
                       if (i + 1 <= NF) { sub(/\/+$/, "", $i); print $i, $(i + 1) } }' "$f"
  done
  for f in "$dir"/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'function flush(  n, m, a, b, u, s) {
           if (on && types ~ /(^| )deb( |$)/) { n = split(uris, u, " "); m = split(suites, s, " ")
             for (a = 1; a <= n; a++) for (b = 1; b <= m; b++) { sub(/\/+$/, "", u[a]); print u[a], s[b] } }
           uris = ""; suites = ""; types = ""; on = 1 }
         BEGIN { on = 1 }
         /^[ \t]*$/ { flush(); next }
         /^#/ { next }
         { key = tolower($1); $1 = ""; sub(/^ +/, "") }
         key == "uris:" { uris = $0 } key == "suites:" { suites = $0 } key == "types:" { types = $0 }
         key == "enabled:" { on = (tolower($0) != "no") }
         END { flush() }' "$f"
  done
}

# Whether the apt sources under DIR already list SUITE (from any mirror).
has_suite() {
  apt_suites "$1" | awk -v suite="$2" '$2 == suite { found = 1 } END { exit !found }'
}

apt_updated=0
apt_update_once() {
  if [ "$apt_updated" -eq 0 ]; then apt-get update -qq; apt_updated=1; fi
}

install_engine() {
  if command -v dockerd >/dev/null 2>&1; then return; fi
  need_root "installing docker.io"
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
  need_root "installing compose v2"
  local own=/etc/apt/sources.list.d/trixie-compose.sources
  if [ ! -f "$own" ] && has_suite /etc/apt trixie; then
    # A second source for the same suite makes apt warn on every update; the host's own is enough.
    log "installing compose v2 from trixie (already in the apt sources: adding no source)"
    apt_update_once
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      -t trixie docker-compose >/dev/null
    return
  fi
  local mirror
  # The mirror the host already uses for Debian, so no registry host is hard-coded.
  mirror=$(bash "$(dirname "$0")/../docker/debian-mirror.sh") || {
    log "no Debian mirror found in the apt sources"; exit 2; }
  log "installing compose v2 from trixie (mirror $mirror, pinned low)"
  if [ ! -f "$own" ]; then
    cat > "$own" <<SRC
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

# The locked-memory limit dockerd starts with: unlimited where this shell may
# raise it, else the hard limit it has (inside a container without
# CAP_SYS_RESOURCE, that hard limit is the most any container will get).
raise_memlock() {
  ulimit -l unlimited 2>/dev/null || ulimit -S -l "$(ulimit -H -l)"
}

start_daemon() {
  if docker info >/dev/null 2>&1; then return; fi
  need_root "starting dockerd"
  local memlock
  memlock=$(raise_memlock && ulimit -l)
  if [ "$memlock" = unlimited ]; then
    log "starting dockerd in the background, memlock unlimited (log: $DOCKERD_LOG)"
  else
    log "starting dockerd in the background, memlock $memlock KiB, the hard limit here (log: $DOCKERD_LOG)"
  fi
  # Its own session: a signal sent to the caller's process group (Ctrl-C, a job
  # runner's kill) must not take the engine down with it. The limit is raised in
  # the subshell only, the one that becomes dockerd.
  (raise_memlock; exec setsid nohup dockerd >"$DOCKERD_LOG" 2>&1 < /dev/null) &
  local _
  for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then return; fi
    sleep 1
  done
  log "dockerd did not become ready in 60 s; last log lines:"
  tail -n 20 "$DOCKERD_LOG" >&2 || true
  exit 1
}

install_debootstrap() {
  if command -v debootstrap >/dev/null 2>&1; then return; fi
  need_root "installing debootstrap"
  log "installing debootstrap (the smoke base on hosts without an image registry)"
  apt_update_once
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
}

# Run through sudo by a user: that user needs the docker group to reach the
# engine's socket for `make smoke` (a new login makes it take effect).
grant_docker_group() {
  local user=${SUDO_USER:-}
  if [ -z "$user" ] || [ "$user" = root ] || [ "$(id -u)" -ne 0 ]; then return; fi
  if id -nG "$user" | tr ' ' '\n' | grep -qx docker; then return; fi
  usermod -aG docker "$user"
  log "added $user to the docker group: log in again (or run 'newgrp docker') before make smoke"
}

main() {
  install_engine
  start_daemon
  grant_docker_group
  install_compose
  install_debootstrap
  report
}

report() {
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
}

ARGS=("$@")
# Sourced (the tests call one function at a time): define the functions only.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then main; fi
