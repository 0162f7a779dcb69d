# A SLURM node for the local proof of the rendered sbatch script: Debian's
# SLURM (slurmctld, slurmd, the client tools), munge and the Docker client,
# plus the smoke image's Python environment (Mooncake Transfer Engine and this
# bundle), so that the smoke's two sides run as job steps on two such nodes,
# in smoke-image containers (runtime docker) or on the nodes (runtime host).
#
#   make slurm-image        # after make smoke-image
#
# The SLURM layers sit on the smoke image's own Debian base and the bundle is
# copied in last: a new bundle wheel rebuilds one small layer, not the apt one.

ARG SMOKE_IMAGE=pdrepro-smoke:0.1.0
ARG SLURM_BASE=debian:bookworm-slim@sha256:d5d3f9c23164ea16f31852f95bd5959aad1c5e854332fe00f7b3a20fcc9f635c

FROM ${SMOKE_IMAGE} AS smoke

FROM ${SLURM_BASE}
ARG DEBIAN_FRONTEND=noninteractive
ARG SLURM_DEB_VERSION=22.05.8-4+deb12u3
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# What the smoke image's Python environment needs from the system, then SLURM.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      python3 libibverbs1 ibverbs-providers librdmacm1 libnuma1 libcurl4 iproute2 curl procps \
      docker.io munge "slurmctld=${SLURM_DEB_VERSION}" "slurmd=${SLURM_DEB_VERSION}" "slurm-client=${SLURM_DEB_VERSION}" \
 && rm -rf /var/lib/apt/lists/*
COPY node.sh /usr/local/bin/pdrepro-slurm-node
# The sbatch script's `docker run` goes to the host's engine (its socket is
# mounted); this wrapper keeps `--network host` on the node's own network.
COPY docker-on-node.sh /usr/local/bin/docker
COPY --from=smoke /opt/pdrepro /opt/pdrepro
ENV PATH=/opt/pdrepro/bin:${PATH} \
    PYTHONUNBUFFERED=1

ARG SMOKE_IMAGE
LABEL org.opencontainers.image.title="pdrepro slurm node" \
      org.opencontainers.image.description="SLURM controller/compute node for the local sbatch proof" \
      org.pdrepro.smoke.image="${SMOKE_IMAGE}" \
      org.pdrepro.slurm.version="${SLURM_DEB_VERSION}"
ENTRYPOINT ["/usr/local/bin/pdrepro-slurm-node"]
CMD ["compute"]
