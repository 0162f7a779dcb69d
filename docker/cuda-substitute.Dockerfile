# A stand-in for the CUDA devel base, for proving the GPU image's Mooncake
# stage where the real base cannot be pulled (no registry) and no GPU exists.
# It is NOT a base for running anything on a GPU: it holds the CUDA runtime
# headers, libcudart and nvcc of the pinned major version, taken from NVIDIA's PyPI
# wheels, laid out where the real image has them (/usr/local/cuda), plus a
# link-time libcuda stub made from those headers (the driver provides the real
# libcuda.so.1 at run time, as in NVIDIA's own images).
#
#   make cuda-substitute     # see docker/images.mk
# No default: the base is the local debootstrapped image whose name docker/images.mk
# owns (SMOKE_BASE_LOCAL); docker/mooncake-stage.sh passes it.
ARG SUBSTITUTE_FROM
FROM ${SUBSTITUTE_FROM}
ARG CUDA_VERSION
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY cuda-wheels/ /tmp/cuda-wheels/
COPY cuda-stub.sh /tmp/cuda-stub.sh
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates gcc libc6-dev unzip \
 && cuda="/usr/local/cuda-${CUDA_VERSION%.*}" \
 && mkdir -p "${cuda}/lib64/stubs" /tmp/cuda-unpacked \
 && for w in /tmp/cuda-wheels/*.whl; do unzip -qo "$w" -d /tmp/cuda-unpacked; done \
 && cp -a /tmp/cuda-unpacked/nvidia/cu*/include "${cuda}/include" \
 && cp -a /tmp/cuda-unpacked/nvidia/cu*/lib/. "${cuda}/lib64/" \
 && cp -a /tmp/cuda-unpacked/nvidia/cu*/bin "${cuda}/bin" \
 && ln -s lib64 "${cuda}/lib" \
 && ln -s "libcudart.so.${CUDA_VERSION%%.*}" "${cuda}/lib64/libcudart.so" \
 && bash /tmp/cuda-stub.sh "${cuda}/include/cuda.h" "${cuda}/lib64/stubs/libcuda.so" \
 && ln -s "${cuda}" /usr/local/cuda \
 && echo "${cuda}/lib64" > /etc/ld.so.conf.d/cuda.conf && ldconfig \
 && rm -rf /tmp/cuda-wheels /tmp/cuda-unpacked /tmp/cuda-stub.sh /var/lib/apt/lists/*
ENV CUDA_VERSION=${CUDA_VERSION} \
    PATH=/usr/local/cuda/bin:${PATH}
LABEL org.pdrepro.substitute="cuda-devel stand-in for the Mooncake stage proof; not a GPU runtime" \
      org.pdrepro.cuda.version="${CUDA_VERSION}"
