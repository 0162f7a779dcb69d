# GPU image for the prefill and decode nodes: SGLang and the Mooncake Transfer
# Engine (GPUDirect RDMA) at the commits the published benchmark measured,
# the SGLang PD router, RDMA userspace and this bundle.
#
#   make build                        # pins come from docker/versions.env
#   make build EXTRA_CA=corp-ca.pem   # TLS-intercepting proxy (build secret)
#   make build WHEELS_ONLY=1          # air-gapped: pip reads wheelhouse/gpu/ only
#   make build MOONCAKE_GIT=DIR SGLANG_GIT=DIR  # sources from local clones (no GitHub)
#   make mooncake-stage               # only the Mooncake stage, wheel in build/
#
# Needs BuildKit (secret mounts). Stage order keeps the slow parts cached:
# the Mooncake build and the SGLang install do not depend on the bundle's
# sources, so editing the bundle rebuilds only the last two layers.

ARG GPU_BASE=nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04@sha256:8b2705ea7a8653ad3451b46ab835eced92d77b44e671b9cf3ad4f95fbb2efe5e
# git: fetch the pinned commit from *_REPO; local: build/mooncake-src and
# build/sglang-src, assembled by docker/source-tree.sh from clones on this
# host (`make build MOONCAKE_GIT=... SGLANG_GIT=...`).
ARG MOONCAKE_SOURCE=git
ARG SGLANG_SOURCE=git

# --------------------------------------------------------------------------
# base: CUDA + cuDNN devel (flashinfer compiles kernels at run time, so the
# runtime keeps nvcc), RDMA userspace, Python, a helper that adds an optional
# extra CA for the duration of one RUN.
# --------------------------------------------------------------------------
FROM ${GPU_BASE} AS base
ARG DEBIAN_FRONTEND=noninteractive
ARG GPU_PYTHON_VERSION=3.12
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY docker/with-extra-ca.sh /usr/local/bin/with-extra-ca
# pip check allowing only the NIXL meta package's other-CUDA backend (docker/pip-check.sh says why).
COPY docker/pip-check.sh /usr/local/bin/pip-check
# Package names common to Ubuntu 24.04 and Debian, so the Mooncake stage can
# also be proven on a Debian stand-in base (docker/cuda-substitute.Dockerfile).
# hadolint ignore=DL3008
RUN --mount=type=secret,id=extra_ca,required=false \
    with-extra-ca apt-get update \
 && with-extra-ca apt-get install -y --no-install-recommends \
      ca-certificates git curl python3 python3-venv python3-dev \
      rdma-core libibverbs1 ibverbs-providers librdmacm1 ibverbs-utils infiniband-diags perftest \
      libnuma1 liburing2 libyaml-0-2 iproute2 pciutils numactl \
 && rm -rf /var/lib/apt/lists/*
# The lock (docker/gpu-requirements.lock) is resolved for one Python; a base
# whose python3 is another would install wheels built for the wrong ABI.
RUN have="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
 && if [ "${have}" != "${GPU_PYTHON_VERSION}" ]; then \
      echo "base image has Python ${have}, the image is pinned to ${GPU_PYTHON_VERSION} (GPU_PYTHON_VERSION in docker/versions.env)" >&2; \
      exit 1; fi
# One virtual environment for everything Python (Ubuntu 24.04 refuses
# system-wide pip installs). /wheelhouse is always searched first; with
# WHEELS_ONLY=1 it is the only source.
ENV VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:${PATH} \
    PIP_FIND_LINKS=/wheelhouse \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
RUN python3 -m venv /opt/venv && mkdir -p /wheelhouse

# --------------------------------------------------------------------------
# mooncake-deps: Mooncake's build dependencies as its dependencies.sh lists
# them for Debian and Ubuntu, from apt directly (its Go download only serves
# etcd, which PD does not use).
# --------------------------------------------------------------------------
FROM base AS mooncake-deps
ARG DEBIAN_FRONTEND=noninteractive
# hadolint ignore=DL3008
RUN --mount=type=secret,id=extra_ca,required=false \
    with-extra-ca apt-get update \
 && with-extra-ca apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config patchelf unzip file \
      libibverbs-dev libnuma-dev libgoogle-glog-dev libgtest-dev libjsoncpp-dev \
      libunwind-dev libboost-all-dev libssl-dev libgrpc-dev libgrpc++-dev \
      libprotobuf-dev protobuf-compiler-grpc libyaml-cpp-dev libcurl4-openssl-dev \
      libhiredis-dev liburing-dev libjemalloc-dev libmsgpack-dev libzmq3-dev \
      libzstd-dev libasio-dev libxxhash-dev \
 && rm -rf /var/lib/apt/lists/*

# The two ways to get the sources; BuildKit runs only the one selected.
FROM mooncake-deps AS mooncake-src-git
ARG MOONCAKE_REPO=https://github.com/kvcache-ai/Mooncake.git
ARG MOONCAKE_COMMIT=6e3a11b97a3ece7f7734cca4374406be2a6a930b
ARG GITHUB_MIRROR=
WORKDIR /src/mooncake
# Exactly the pinned commit and its submodules (pybind11, yalantinglibs).
RUN --mount=type=secret,id=extra_ca,required=false \
    if [ -n "${GITHUB_MIRROR}" ]; then \
      git config --global url."${GITHUB_MIRROR%/}/".insteadOf https://github.com/; fi \
 && git init -q . \
 && git remote add origin "${MOONCAKE_REPO}" \
 && with-extra-ca git fetch -q --depth 1 origin "${MOONCAKE_COMMIT}" \
 && git checkout -q FETCH_HEAD \
 && test "$(git rev-parse HEAD)" = "${MOONCAKE_COMMIT}" \
 && with-extra-ca git submodule update -q --init --recursive --depth 1

FROM mooncake-deps AS mooncake-src-local
ARG MOONCAKE_COMMIT=6e3a11b97a3ece7f7734cca4374406be2a6a930b
COPY build/mooncake-src/ /src/mooncake/
# The stamp is written by docker/source-tree.sh from the commit it archived.
RUN grep -qx "mooncake=${MOONCAKE_COMMIT}" /src/mooncake/.pdrepro-source \
 || { echo "build/mooncake-src is not Mooncake ${MOONCAKE_COMMIT}; rerun with MOONCAKE_GIT=<a clone holding it>" >&2; exit 1; }

# --------------------------------------------------------------------------
# mooncake: Transfer Engine from source at the pin, packed as a wheel into
# /out, with the engine's own data validator next to it.
# --------------------------------------------------------------------------
# hadolint ignore=DL3006
FROM mooncake-src-${MOONCAKE_SOURCE} AS mooncake
ARG MOONCAKE_CMAKE_FLAGS="-DUSE_CUDA=ON -DWITH_EP=OFF -DUSE_ETCD=OFF -DWITH_STORE=OFF -DWITH_STORE_RUST=OFF -DBUILD_UNIT_TESTS=OFF -DBUILD_BENCHMARK=OFF"
ARG WHEELS_ONLY=
ARG BUILD_JOBS=
WORKDIR /src/mooncake
# yalantinglibs is a header library Mooncake expects to find installed.
RUN cmake -S extern/yalantinglibs -B /tmp/ylt -G Ninja \
      -DBUILD_EXAMPLES=OFF -DBUILD_BENCHMARK=OFF -DBUILD_UNIT_TESTS=OFF \
 && cmake --build /tmp/ylt \
 && cmake --install /tmp/ylt \
 && rm -rf /tmp/ylt
# libcuda comes from the driver at run time; link against the stub here.
# MOONCAKE_CMAKE_FLAGS is split on spaces on purpose.
# hadolint ignore=SC2086
RUN export LIBRARY_PATH=/usr/local/cuda/lib64/stubs${LIBRARY_PATH:+:${LIBRARY_PATH}} \
 && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DPython3_EXECUTABLE=/opt/venv/bin/python ${MOONCAKE_CMAKE_FLAGS} \
 && cmake --build build ${BUILD_JOBS:+--parallel ${BUILD_JOBS}}
# Upstream's packer (auditwheel-repaired wheel; leaves libibverbs, libnuma,
# libcurl and CUDA to the image). Its Python tools come from the hash-locked
# list, from the site wheels when WHEELS_ONLY is set; copied only now so a new
# wheel never recompiles Mooncake.
COPY wheelhouse/gpu/ /wheelhouse/
COPY docker/mooncake-build-tools.lock /tmp/mooncake-build-tools.lock
RUN --mount=type=secret,id=extra_ca,required=false \
    if [ -n "${WHEELS_ONLY}" ]; then export PIP_NO_INDEX=1; fi \
 && with-extra-ca pip install --require-hashes -r /tmp/mooncake-build-tools.lock \
 && sed -e 's/ *\\$//' -e '/^ *--hash/d' /tmp/mooncake-build-tools.lock > /tmp/build-tools.constraints \
 && export PIP_CONSTRAINT=/tmp/build-tools.constraints \
 && PYTHON_VERSION="$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
    OUTPUT_DIR=dist with-extra-ca bash scripts/build_wheel.sh \
 && mkdir -p /out/validator \
 && cp mooncake-wheel/dist/*.whl /out/ \
 && cp build/mooncake-transfer-engine/example/transfer_engine_validator /out/validator/ \
 && if [ -f .pdrepro-source ]; then cp .pdrepro-source /out/SOURCE; \
    else echo "mooncake=$(git rev-parse HEAD)" > /out/SOURCE; fi

# SGLang's sources at the pin, fetched or from build/sglang-src; BuildKit
# runs only the one selected.
FROM base AS sglang-src-git
ARG SGLANG_REPO=https://github.com/sgl-project/sglang.git
ARG SGLANG_COMMIT=43124cdd90e543ea79b63800390e917063809510
ARG GITHUB_MIRROR=
WORKDIR /src/sglang
RUN --mount=type=secret,id=extra_ca,required=false \
    if [ -n "${GITHUB_MIRROR}" ]; then \
      git config --global url."${GITHUB_MIRROR%/}/".insteadOf https://github.com/; fi \
 && git init -q . \
 && git remote add origin "${SGLANG_REPO}" \
 && with-extra-ca git fetch -q --depth 1 origin "${SGLANG_COMMIT}" \
 && git checkout -q FETCH_HEAD \
 && test "$(git rev-parse HEAD)" = "${SGLANG_COMMIT}"

FROM base AS sglang-src-local
ARG SGLANG_COMMIT=43124cdd90e543ea79b63800390e917063809510
COPY build/sglang-src/ /src/sglang/
RUN grep -qx "sglang=${SGLANG_COMMIT}" /src/sglang/.pdrepro-source \
 || { echo "build/sglang-src is not SGLang ${SGLANG_COMMIT}; rerun with SGLANG_GIT=<a clone holding it>" >&2; exit 1; }

# hadolint ignore=DL3006
FROM sglang-src-${SGLANG_SOURCE} AS sglang-src

# --------------------------------------------------------------------------
# python-env: the hash-locked environment (docker/gpu-requirements.lock), then
# SGLang at the pin installed from python/ on top of it, without extras:
# diffusion, http2 and tracing serve no part of text PD serving.
# --------------------------------------------------------------------------
FROM base AS python-env
ARG SGLANG_COMMIT=43124cdd90e543ea79b63800390e917063809510
ARG SGLANG_NEAREST_RELEASE=0.5.15.post1
ARG WHEELS_ONLY=
# Site wheels (air-gapped/proxy builds); empty by default. A separate folder
# from the smoke wheelhouse so `make wheelhouse` does not invalidate this stage.
COPY wheelhouse/gpu/ /wheelhouse/
# Every Python package of the image, sglang-router and the bundle's own
# dependencies included, exactly as locked: hashes required, and --no-deps so
# pip adds nothing the lock lacks (`pip check` below names any gap). First,
# so the GB-sized layer is reused while the SGLang checkout changes.
COPY docker/gpu-requirements.lock /tmp/gpu-requirements.lock
RUN --mount=type=secret,id=extra_ca,required=false \
    if [ -n "${WHEELS_ONLY}" ]; then export PIP_NO_INDEX=1; fi \
 && with-extra-ca pip install --require-hashes --no-deps --only-binary=:all: \
      -r /tmp/gpu-requirements.lock \
 && rm /tmp/gpu-requirements.lock
COPY --from=sglang-src /src/sglang /src/sglang
WORKDIR /src/sglang
# SGLang itself from the checkout, nothing else: no index, no dependencies,
# the build backend from the lock (--no-build-isolation). The lock leaves out
# setuptools-rust, so the optional gRPC extension is not compiled and no Rust
# or protoc is needed (versions.env, SGLANG_NEAREST_RELEASE, says why). A
# pinned fetch has no tags, so the version is given: release + commit.
# `pip check` then holds the lock to what this commit declares and stops the
# build on a drift, naming the package.
RUN SETUPTOOLS_SCM_PRETEND_VERSION_FOR_SGLANG="${SGLANG_NEAREST_RELEASE}+g${SGLANG_COMMIT}" \
    pip install --no-index --no-deps --no-build-isolation ./python \
 && pip-check
# The engine built above replaces any Mooncake wheel a dependency pulled in.
# The import check needs libcuda.so.1, which only the driver provides at run
# time: the toolkit's link stub stands in for it, for this one command.
COPY --from=mooncake /out/ /tmp/mooncake-wheel/
RUN pip uninstall -y mooncake-transfer-engine mooncake-transfer-engine-non-cuda || true \
 && pip install --no-deps /tmp/mooncake-wheel/*.whl \
 && rm -rf /tmp/mooncake-wheel \
 && stub="$(mktemp -d)" \
 && ln -s /usr/local/cuda/lib64/stubs/libcuda.so "${stub}/libcuda.so.1" \
 && LD_LIBRARY_PATH="${stub}${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}" \
    python -c "from mooncake.engine import TransferEngine" \
 && rm -rf "${stub}" \
 && pip-check

# --------------------------------------------------------------------------
# runtime: base + the environment; no compilers for Mooncake, no sources.
# --------------------------------------------------------------------------
FROM base AS runtime
COPY --from=python-env /opt/venv /opt/venv
# Only this layer and the labels change when the bundle changes.
COPY dist/pdrepro-*.whl /tmp/bundle/
ARG WHEELS_ONLY=
# The bundle's dependencies are in the lock, installed above: the wheel goes
# in alone and `pip check` proves nothing is missing. The site wheels stay
# mounted (not copied) for an offline pip all the same.
RUN --mount=type=secret,id=extra_ca,required=false \
    --mount=type=bind,source=wheelhouse/gpu,target=/wheelhouse \
    if [ -n "${WHEELS_ONLY}" ]; then export PIP_NO_INDEX=1; fi \
 && with-extra-ca pip install --no-deps /tmp/bundle/pdrepro-*.whl \
 && pip-check \
 && rm -rf /tmp/bundle \
 && pdrepro --version
ENV PYTHONUNBUFFERED=1
ARG GPU_BASE
ARG CUDA_BASE_DIGEST=sha256:8b2705ea7a8653ad3451b46ab835eced92d77b44e671b9cf3ad4f95fbb2efe5e
ARG MOONCAKE_COMMIT=6e3a11b97a3ece7f7734cca4374406be2a6a930b
ARG SGLANG_COMMIT=43124cdd90e543ea79b63800390e917063809510
ARG SGLANG_ROUTER_VERSION=0.3.2
ARG BUNDLE_VERSION=0.1.0
LABEL org.opencontainers.image.title="pdrepro gpu" \
      org.opencontainers.image.description="SGLang + Mooncake Transfer Engine for PD-disaggregated serving" \
      org.opencontainers.image.version="${BUNDLE_VERSION}" \
      org.opencontainers.image.base.name="${GPU_BASE}" \
      org.opencontainers.image.base.digest="${CUDA_BASE_DIGEST}" \
      org.pdrepro.sglang.commit="${SGLANG_COMMIT}" \
      org.pdrepro.mooncake.commit="${MOONCAKE_COMMIT}" \
      org.pdrepro.sglang-router.version="${SGLANG_ROUTER_VERSION}"
# What `pdrepro versions` reports as the image it runs in.
ENV PDREPRO_IMAGE=gpu \
    PDREPRO_IMAGE_SGLANG_COMMIT=${SGLANG_COMMIT} \
    PDREPRO_IMAGE_MOONCAKE_COMMIT=${MOONCAKE_COMMIT} \
    PDREPRO_IMAGE_BASE=${GPU_BASE}
CMD ["pdrepro", "versions"]
