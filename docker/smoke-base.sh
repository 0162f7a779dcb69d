#!/usr/bin/env bash
# Make the smoke image's Debian base without an image registry: debootstrap a
# minimal root filesystem from the Debian mirror this host's apt already uses
# and `docker import` it. Used where `docker pull` cannot reach a registry
# (air-gapped labs, CI); everywhere else the build pulls the pinned digest.
#
# Usage: smoke-base.sh SUITE IMAGE_NAME
set -euo pipefail

suite=${1:?usage: smoke-base.sh SUITE IMAGE_NAME}
name=${2:?usage: smoke-base.sh SUITE IMAGE_NAME}

say() { printf 'smoke-base: %s\n' "$*" >&2; }

if docker image inspect "$name" >/dev/null 2>&1; then
  say "$name already present; remove it with 'docker rmi $name' to rebuild"
  exit 0
fi
command -v debootstrap >/dev/null 2>&1 || {
  say "debootstrap is not installed: apt-get install debootstrap"; exit 2; }
[ "$(id -u)" -eq 0 ] || { say "debootstrap needs root"; exit 2; }

mirror=${DEBIAN_MIRROR:-$(bash "$(dirname "$0")/debian-mirror.sh" || true)}
[ -n "$mirror" ] || { say "no Debian mirror in the apt sources; set DEBIAN_MIRROR=<uri>"; exit 2; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
say "debootstrap $suite from $mirror (about 1-3 minutes)"
debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.log" 2>&1 || {
  tail -n 20 "$root.log" >&2; say "debootstrap failed (full log: $root.log)"; exit 1; }
rm -f "$root.log"

# Slim it the way Debian's -slim images are: no docs, manuals or apt caches.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
       "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/log/*.log
mkdir -p "$root/etc/dpkg/dpkg.cfg.d"
printf 'path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/info/*\n' \
  > "$root/etc/dpkg/dpkg.cfg.d/docker-slim"

tar -C "$root" -c . | docker import \
  --change 'CMD ["bash"]' --change 'ENV LANG=C.UTF-8' \
  --message "debootstrap --variant=minbase $suite $mirror" - "$name" >/dev/null
say "imported $name ($(docker image inspect -f '{{.Size}}' "$name" | awk '{printf "%.0f MB", $1/1e6}'))"
