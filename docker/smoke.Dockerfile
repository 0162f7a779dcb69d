# CPU-only smoke image: RDMA userspace, the Mooncake Transfer Engine and NIXL
# (PyPI wheels, hash-locked in docker/smoke-requirements.lock, no CUDA wheels)
# and this bundle. Builds offline: the context is the wheelhouse that
# `make wheelhouse` fills on the host from the lock; only Debian packages come
# over the network (through the base image's apt sources).
#
#   make smoke-image          # wheelhouse + build, base pinned by digest
#   make smoke-base           # registry-less hosts: debootstrap + docker import

ARG SMOKE_BASE=debian:bookworm-slim@sha256:d5d3f9c23164ea16f31852f95bd5959aad1c5e854332fe00f7b3a20fcc9f635c

FROM ${SMOKE_BASE} AS python-env
ARG DEBIAN_FRONTEND=noninteractive
ARG SMOKE_PYTHON_VERSION=3.11
ARG MOONCAKE_WHEEL=mooncake-transfer-engine-non-cuda
ARG MOONCAKE_WHEEL_VERSION=0.3.11.post1
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
# The wheelhouse was downloaded for one Python ABI; fail here, not at import.
RUN python3 -c "import sys; v='%d.%d' % sys.version_info[:2]; assert v == '${SMOKE_PYTHON_VERSION}', f'base has Python {v}, wheelhouse is for ${SMOKE_PYTHON_VERSION}'"
COPY smoke-requirements.lock *.whl /wheelhouse/
# Exactly the lock, every wheel checked against its hash; --no-deps because the
# lock is the whole environment and leaves out on purpose what nixl-cu13
# declares but a CPU image does not use (torch and its CUDA wheels).
RUN python3 -m venv /opt/pdrepro \
 && /opt/pdrepro/bin/pip install --no-cache-dir --no-index --find-links /wheelhouse \
      --require-hashes --no-deps -r /wheelhouse/smoke-requirements.lock
# The bundle's own wheel, built from this checkout, in a layer of its own: a
# change to the bundle reuses the locked layer above.
COPY bundle/pdrepro-*.whl /wheelhouse/bundle/
RUN /opt/pdrepro/bin/pip install --no-cache-dir --no-index --no-deps /wheelhouse/bundle/pdrepro-*.whl \
 && /opt/pdrepro/bin/pip uninstall -y pip setuptools

FROM ${SMOKE_BASE}
ARG DEBIAN_FRONTEND=noninteractive
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# RDMA userspace (verbs, rdma_cm, providers incl. soft-RoCE, diagnostics and
# ib_*_bw) plus what the Mooncake wheel leaves to the system (numa, curl).
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      python3 \
      libibverbs1 ibverbs-providers librdmacm1 rdma-core ibverbs-utils perftest \
      libnuma1 libcurl4 iproute2 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=python-env /opt/pdrepro /opt/pdrepro
ENV PATH=/opt/pdrepro/bin:${PATH} \
    PYTHONUNBUFFERED=1
# Both transfer engines load here, without a GPU (NIXL picks the flavour installed).
RUN python3 -c "import mooncake.engine, nixl; nixl.nixl_agent_config()"

# Labels last so a new bundle version or context hash reuses every layer above.
ARG SMOKE_BASE
ARG MOONCAKE_WHEEL
ARG MOONCAKE_WHEEL_VERSION
ARG NIXL_VERSION=1.5.1
ARG MOONCAKE_COMMIT=6e3a11b97a3ece7f7734cca4374406be2a6a930b
ARG SGLANG_COMMIT=43124cdd90e543ea79b63800390e917063809510
ARG BUNDLE_VERSION=0.1.0
ARG CONTEXT_HASH=unset
LABEL org.opencontainers.image.title="pdrepro smoke" \
      org.opencontainers.image.description="CPU-only Mooncake Transfer Engine and NIXL smoke test image" \
      org.opencontainers.image.version="${BUNDLE_VERSION}" \
      org.opencontainers.image.base.name="${SMOKE_BASE}" \
      org.pdrepro.mooncake.commit="${MOONCAKE_COMMIT}" \
      org.pdrepro.mooncake.wheel="${MOONCAKE_WHEEL}==${MOONCAKE_WHEEL_VERSION}" \
      org.pdrepro.nixl.version="${NIXL_VERSION}" \
      org.pdrepro.sglang.commit="${SGLANG_COMMIT}" \
      org.pdrepro.context-hash="${CONTEXT_HASH}"
# What `pdrepro versions` reports as the image it runs in.
ENV PDREPRO_IMAGE=smoke \
    PDREPRO_IMAGE_MOONCAKE_COMMIT=${MOONCAKE_COMMIT} \
    PDREPRO_IMAGE_BASE=${SMOKE_BASE}
CMD ["pdrepro", "--help"]
