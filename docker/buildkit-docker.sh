#!/usr/bin/env bash
# Print a Docker client that can build with BuildKit (secret mounts, stages
# chosen by build argument): BUILD_DOCKER when set; `docker` with its buildx
# plugin; else Debian's docker.io client at /usr/bin/docker, whose BuildKit is
# built in. A newer client without buildx (it refuses DOCKER_BUILDKIT=1) is
# skipped. Exit 2 with the fix when none qualifies.
set -euo pipefail
if [ -n "${BUILD_DOCKER:-}" ]; then echo "$BUILD_DOCKER"; exit 0; fi
if docker buildx version >/dev/null 2>&1; then echo docker; exit 0; fi
if [ -x /usr/bin/docker ] && DOCKER_BUILDKIT=1 /usr/bin/docker build --help 2>/dev/null | grep -q -- '--secret'; then
  echo /usr/bin/docker; exit 0
fi
echo "no Docker client here can build with BuildKit: install the buildx plugin (or Debian's docker.io), or set BUILD_DOCKER=/path/to/docker" >&2
exit 2
