#!/usr/bin/env bash
# Build the smoke image unless an image with the same context hash exists.
# Usage: build-smoke.sh IMAGE PINNED_BASE LOCAL_BASE SUITE WHEELHOUSE [docker build args...]
set -euo pipefail
image=$1 pinned=$2 local_base=$3 suite=$4 wheelhouse=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
say() { printf 'smoke-image: %s\n' "$*" >&2; }

has_image() { docker image inspect "$1" >/dev/null 2>&1; }

# Without an engine every check below fails for the wrong reason; say so first.
if ! docker info >/dev/null 2>&1; then
  say "no Docker engine answers 'docker info': install Docker (with compose v2) and start it, or check DOCKER_HOST and your access to its socket"
  exit 2
fi

# The pinned digest when it is here or can be pulled; otherwise a base made
# from the host's apt mirror (registry-less hosts).
if has_image "$pinned"; then
  base=$pinned
elif has_image "$local_base"; then
  base=$local_base
  say "using $local_base (made by 'make smoke-base'); the pinned $pinned is not present"
elif docker pull -q "$pinned" >/dev/null 2>&1; then
  base=$pinned
else
  say "cannot pull $pinned (no registry?); making a base with debootstrap instead"
  bash "$here/smoke-base.sh" "$suite" "$local_base"
  base=$local_base
fi

hash=$( { cat "$here/smoke.Dockerfile"; printf '%s\n' "$base" "$@";
          (cd "$wheelhouse" && sha256sum -- smoke-requirements.lock *.whl bundle/*.whl | LC_ALL=C sort -k2); } | sha256sum | cut -c1-64)
current=$(docker image inspect -f '{{index .Config.Labels "org.pdrepro.context-hash"}}' "$image" 2>/dev/null || true)
if [ "$current" = "$hash" ]; then
  say "$image is up to date (context $hash)"
else
  say "building $image from $base (context $hash)"
  docker build -f "$here/smoke.Dockerfile" -t "$image" \
    --build-arg "SMOKE_BASE=$base" --build-arg "CONTEXT_HASH=$hash" "$@" "$wheelhouse"
  # The image this one replaced is now untagged; drop it so rebuilds do not pile up.
  docker image prune -f --filter "label=org.pdrepro.context-hash" >/dev/null 2>&1 || true
fi
size=$(docker image inspect -f '{{.Size}}' "$image")
say "$image: $((size / 1000000)) MB"
