#!/usr/bin/env bash
# Build the GPU image's `mooncake` stage on a host that has neither the CUDA
# base image nor GitHub: the sources come from a local checkout, the base is
# the CUDA stand-in (docker/cuda-substitute.Dockerfile), Python tools come
# from the hash-locked wheels. Leaves the wheel (USE_CUDA=ON), the engine's
# validator and a SOURCE stamp under OUT.
#
# Usage: mooncake-stage.sh OUT   (settings from the environment, see below;
#        `make mooncake-stage` passes them from docker/versions.env)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${1:?usage: mooncake-stage.sh OUT}
say() { printf 'mooncake-stage: %s\n' "$*" >&2; }
die() { say "$*"; exit 2; }

: "${MOONCAKE_COMMIT:?}" "${MOONCAKE_CMAKE_FLAGS:?}" "${CUDA_VERSION:?}" "${CUDA_SUBSTITUTE_WHEELS:?}"
: "${CUDA_SUBSTITUTE_IMAGE:?}" "${SMOKE_BASE_LOCAL:?}" "${SMOKE_DEBIAN_SUITE:?}" "${SMOKE_PYTHON_VERSION:?}"
PYTHON=${PYTHON:-python3}
started=$(date +%s)

# BuildKit is needed (secret mounts, stage selection by argument).
docker_cli=$(bash "$here/buildkit-docker.sh") || exit 2
"$docker_cli" info >/dev/null 2>&1 ||
  die "no Docker engine answers '$docker_cli info': start it (e.g. .ci/docker-engine.sh) or check DOCKER_HOST"
export DOCKER_BUILDKIT=1

# 1. Sources at the pin, as plain files in the build context.
src="$root/build/mooncake-src"
if ! grep -qsx "mooncake=$MOONCAKE_COMMIT" "$src/.pdrepro-source"; then
  [ -n "${MOONCAKE_GIT:-}" ] ||
    die "no Mooncake sources in build/mooncake-src: set MOONCAKE_GIT=/path/to/a/Mooncake/clone (holding $MOONCAKE_COMMIT and its submodules, or pass MOONCAKE_SUBMODULES='extern/pybind11=DIR extern/yalantinglibs=DIR')"
  # shellcheck disable=SC2086  # a list of PATH=DIR words
  bash "$here/source-tree.sh" mooncake "$MOONCAKE_GIT" "$MOONCAKE_COMMIT" "$src" ${MOONCAKE_SUBMODULES:-}
fi

# 2. The CUDA stand-in base, on the registry-less Debian base.
if ! "$docker_cli" image inspect "$CUDA_SUBSTITUTE_IMAGE" >/dev/null 2>&1; then
  bash "$here/smoke-base.sh" "$SMOKE_DEBIAN_SUITE" "$SMOKE_BASE_LOCAL"
  ctx="$root/build/cuda-substitute"
  rm -rf "$ctx" && mkdir -p "$ctx/cuda-wheels"
  say "downloading the CUDA $CUDA_VERSION wheels: $CUDA_SUBSTITUTE_WHEELS"
  # shellcheck disable=SC2086  # a list of requirement words
  "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --python-version 3 \
    -d "$ctx/cuda-wheels" $CUDA_SUBSTITUTE_WHEELS ||
    die "could not download $CUDA_SUBSTITUTE_WHEELS from PyPI; check the network or put the wheels in $ctx/cuda-wheels"
  cp "$here/cuda-stub.sh" "$ctx/"
  "$docker_cli" build -q -f "$here/cuda-substitute.Dockerfile" -t "$CUDA_SUBSTITUTE_IMAGE" \
    --build-arg "SUBSTITUTE_FROM=$SMOKE_BASE_LOCAL" --build-arg "CUDA_VERSION=$CUDA_VERSION" "$ctx" >/dev/null
  say "made $CUDA_SUBSTITUTE_IMAGE"
fi
# The stand-in is Debian's base, so the stage's python3 is Debian's: the one
# the smoke image is pinned to on the same suite.
base_python=$SMOKE_PYTHON_VERSION

# 3. The packer's Python tools, hash-checked, so the stage needs no index.
mkdir -p "$root/wheelhouse/gpu"
"$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --require-hashes -r "$here/mooncake-build-tools.lock" \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
  --python-version "$base_python" -d "$root/wheelhouse/gpu" ||
  die "could not download the wheels in docker/mooncake-build-tools.lock into wheelhouse/gpu"

# 4. The stage itself, from the same Dockerfile as the image.
tag="pdrepro-mooncake-stage:${MOONCAKE_COMMIT:0:12}"
say "building the mooncake stage of docker/gpu.Dockerfile on $CUDA_SUBSTITUTE_IMAGE (Python $base_python); log: build/mooncake-stage.log"
mkdir -p "$root/build"
if ! (cd "$root" && "$docker_cli" build --progress=plain -f docker/gpu.Dockerfile --target mooncake -t "$tag" \
      --build-arg "GPU_BASE=$CUDA_SUBSTITUTE_IMAGE" \
      --build-arg "GPU_PYTHON_VERSION=$base_python" \
      --build-arg MOONCAKE_SOURCE=local \
      --build-arg "MOONCAKE_COMMIT=$MOONCAKE_COMMIT" \
      --build-arg "MOONCAKE_CMAKE_FLAGS=$MOONCAKE_CMAKE_FLAGS" \
      --build-arg WHEELS_ONLY=1 \
      --build-arg "BUILD_JOBS=${BUILD_JOBS:-}" \
      . >"$root/build/mooncake-stage.log" 2>&1); then
  tail -n 30 "$root/build/mooncake-stage.log" >&2
  die "the mooncake stage failed; the full log is build/mooncake-stage.log"
fi

# 5. What it made, copied out of the stage.
rm -rf "$out" && mkdir -p "$out"
cid=$("$docker_cli" create "$tag")
trap '"$docker_cli" rm -f "$cid" >/dev/null 2>&1 || true' EXIT
"$docker_cli" cp "$cid:/out/." "$out/"
wheel=$(find "$out" -maxdepth 1 -name 'mooncake_transfer_engine*.whl' | head -n 1)
[ -n "$wheel" ] || die "the stage left no Mooncake wheel in /out"
elapsed=$(( $(date +%s) - started ))
{
  echo "image=$tag"
  echo "base=$CUDA_SUBSTITUTE_IMAGE"
  echo "python=$base_python"
  echo "cmake_flags=$MOONCAKE_CMAKE_FLAGS"
  echo "wheel=$(basename "$wheel")"
  echo "wheel_sha256=$(sha256sum "$wheel" | cut -d' ' -f1)"
  echo "seconds=$elapsed"
} >>"$out/SOURCE"
say "wheel: $wheel ($(du -h "$wheel" | cut -f1)); took ${elapsed}s"
