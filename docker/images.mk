# Image targets, included by the top-level Makefile. Every version and name
# comes from docker/versions.env (KEY=VALUE lines are valid make assignments).
include docker/versions.env

BUNDLE_VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' src/pdrepro/__init__.py)
WHEELHOUSE ?= wheelhouse
# Registry-less hosts: `make smoke-base` imports a debootstrapped Debian here.
SMOKE_BASE_LOCAL ?= pdrepro-base:$(SMOKE_DEBIAN_SUITE)-slim-local
SMOKE_BASE ?= $(SMOKE_BASE_IMAGE)@$(SMOKE_BASE_DIGEST)
GPU_BASE ?= $(CUDA_BASE_IMAGE)@$(CUDA_BASE_DIGEST)
HADOLINT ?= $(BIN)/hadolint

# Wheels for the smoke image's Debian Python (manylinux up to its glibc 2.36).
WHEEL_PLATFORMS := $(foreach v,36 35 34 31 28 27 24 17,--platform manylinux_2_$(v)_x86_64) \
                   --platform manylinux2014_x86_64 --platform linux_x86_64

SMOKE_LOCK := docker/smoke-requirements.lock
SMOKE_LOCK_IN := docker/smoke-requirements.in
SMOKE_LOCK_EXCLUDES := docker/smoke-excludes.txt

# The smoke image's Python packages, hash-locked like the GPU image's: the wheel
# pins of versions.env and the bundle's dependencies keep their one place and
# are handed to the resolver from there.
smoke-lock: setup ## Re-resolve docker/smoke-requirements.lock (the smoke image's wheels, hashes) from PyPI (uv)
	$(BIN)/pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"
	printf '%s\n' "$(MOONCAKE_WHEEL)==$(MOONCAKE_WHEEL_VERSION)" "nixl==$(NIXL_VERSION)" \
	  "$(SMOKE_NIXL_WHEEL)==$(NIXL_VERSION)" | $(BIN)/uv pip compile --quiet --upgrade --generate-hashes \
	  --only-binary :all: --custom-compile-command "make smoke-lock" \
	  --python-version $(SMOKE_PYTHON_VERSION) --python-platform x86_64-$(SMOKE_WHEEL_PLATFORM:_x86_64=) \
	  --exclude-newer $(SMOKE_LOCK_EXCLUDE_NEWER) --excludes $(SMOKE_LOCK_EXCLUDES) \
	  -o $(SMOKE_LOCK) $(SMOKE_LOCK_IN) - pyproject.toml
	@echo "smoke-lock: $$(grep -c '^[A-Za-z0-9]' $(SMOKE_LOCK)) packages in $(SMOKE_LOCK)"

# Every wheel of the lock, checked against its hashes, for the offline build.
$(WHEELHOUSE)/.deps: $(SMOKE_LOCK) | setup
	@mkdir -p $(WHEELHOUSE)
	@echo "wheelhouse: downloading the $$(grep -c '^[A-Za-z0-9]' $(SMOKE_LOCK)) wheels of $(SMOKE_LOCK) for CPython $(SMOKE_PYTHON_VERSION)"
	$(PYTHON) -m pip download --quiet --disable-pip-version-check --only-binary=:all: --require-hashes --no-deps \
	  $(WHEEL_PLATFORMS) --python-version $(SMOKE_PYTHON_VERSION) --implementation cp \
	  --abi cp$(subst .,,$(SMOKE_PYTHON_VERSION)) -d $(WHEELHOUSE) -r $(SMOKE_LOCK)
	@cp $(SMOKE_LOCK) $(WHEELHOUSE)/smoke-requirements.lock
	@touch $@

wheelhouse: $(WHEELHOUSE)/.deps ## Fill wheelhouse/ with every wheel the smoke image installs (offline build)
	@rm -f $(WHEELHOUSE)/pdrepro-*.whl $(WHEELHOUSE)/bundle/pdrepro-*.whl
	$(PYTHON) -m pip wheel --quiet --disable-pip-version-check --no-deps -w $(WHEELHOUSE)/bundle .
	@ls $(WHEELHOUSE)/bundle/pdrepro-*.whl

smoke-base: ## Make the smoke image's Debian base from the host's apt mirror (no registry needed)
	bash docker/smoke-base.sh $(SMOKE_DEBIAN_SUITE) $(SMOKE_BASE_LOCAL)

# Rebuilds only when the Dockerfile, the wheels or a pin changed (hash label).
# One lock covers refreshing the wheelhouse and building: a parallel caller
# must not replace the bundle's wheel while another build reads it.
smoke-image: ## Build the CPU smoke image (SMOKE_IMAGE in docker/versions.env); prints its size
	@mkdir -p build
	@flock build/.smoke-image.lock $(MAKE) --no-print-directory smoke-image-locked

smoke-image-locked: wheelhouse
	@bash docker/build-smoke.sh \
	  "$(SMOKE_IMAGE)" "$(SMOKE_BASE)" "$(SMOKE_BASE_LOCAL)" "$(SMOKE_DEBIAN_SUITE)" "$(WHEELHOUSE)" \
	  --build-arg SMOKE_PYTHON_VERSION=$(SMOKE_PYTHON_VERSION) \
	  --build-arg MOONCAKE_WHEEL=$(MOONCAKE_WHEEL) \
	  --build-arg MOONCAKE_WHEEL_VERSION=$(MOONCAKE_WHEEL_VERSION) \
	  --build-arg NIXL_VERSION=$(NIXL_VERSION) \
	  --build-arg MOONCAKE_COMMIT=$(MOONCAKE_COMMIT) \
	  --build-arg SGLANG_COMMIT=$(SGLANG_COMMIT) \
	  --build-arg BUNDLE_VERSION=$(BUNDLE_VERSION)

# Extra CA for a TLS-intercepting proxy: EXTRA_CA=/path/ca.pem (a build secret,
# never stored in a layer). Air-gapped: WHEELS_ONLY=1 with Python 3.12 wheels
# in wheelhouse/gpu/ and GITHUB_MIRROR=<git mirror prefix> for the two sources.
EXTRA_CA ?=
WHEELS_ONLY ?=
GITHUB_MIRROR ?=
# The GPU build's inputs, checked in a second before the hour-long build:
# base digest, the locks against versions.env, local source trees (from MOONCAKE_GIT,
# SGLANG_GIT) at the pinned commits or the repositories reachable, and with
# WHEELS_ONLY every locked wheel in the wheelhouse. One line and exit 2 when not.
# Local clones (MOONCAKE_GIT, SGLANG_GIT) become plain source trees under build/
# (docker/source-tree.sh) that the build copies instead of fetching.
MOONCAKE_GIT ?=
MOONCAKE_SUBMODULES ?=
SGLANG_GIT ?=
MOONCAKE_SOURCE := $(if $(MOONCAKE_GIT),local,git)
SGLANG_SOURCE := $(if $(SGLANG_GIT),local,git)
BUILDCHECK = PYTHONPATH=src $(PYTHON) -m pdrepro.image.build_inputs --base '$(GPU_BASE)' \
  $(if $(MOONCAKE_GIT),--source mooncake=build/mooncake-src) $(if $(SGLANG_GIT),--source sglang=build/sglang-src) \
  $(if $(GITHUB_MIRROR),--mirror $(GITHUB_MIRROR)) $(if $(WHEELS_ONLY),--wheelhouse $(WHEELHOUSE)/gpu)
build-check: ## Check the GPU build's inputs only (what `make build` does first)
	@$(BUILDCHECK)

source-trees: ## Cut build/mooncake-src and build/sglang-src from MOONCAKE_GIT / SGLANG_GIT (make build does it)
	$(if $(MOONCAKE_GIT),@bash docker/source-tree.sh mooncake "$(MOONCAKE_GIT)" $(MOONCAKE_COMMIT) build/mooncake-src $(MOONCAKE_SUBMODULES))
	$(if $(SGLANG_GIT),@bash docker/source-tree.sh sglang "$(SGLANG_GIT)" $(SGLANG_COMMIT) build/sglang-src)

build: source-trees ## Build the GPU image GPU_IMAGE (SGLang + Mooncake at the pins; needs BuildKit, ~1-2 h)
	@$(BUILDCHECK)
	@mkdir -p $(WHEELHOUSE)/gpu
	@rm -f dist/pdrepro-*.whl
	$(PYTHON) -m pip wheel --quiet --disable-pip-version-check --no-deps -w dist .
	cli=$$(bash docker/buildkit-docker.sh) && DOCKER_BUILDKIT=1 "$$cli" build -f docker/gpu.Dockerfile -t $(GPU_IMAGE) \
	  --build-arg GPU_BASE=$(GPU_BASE) \
	  --build-arg CUDA_BASE_DIGEST=$(CUDA_BASE_DIGEST) \
	  --build-arg GPU_PYTHON_VERSION=$(GPU_PYTHON_VERSION) \
	  --build-arg MOONCAKE_REPO=$(MOONCAKE_REPO) \
	  --build-arg MOONCAKE_COMMIT=$(MOONCAKE_COMMIT) \
	  --build-arg "MOONCAKE_CMAKE_FLAGS=$(MOONCAKE_CMAKE_FLAGS)" \
	  --build-arg SGLANG_REPO=$(SGLANG_REPO) \
	  --build-arg SGLANG_COMMIT=$(SGLANG_COMMIT) \
	  --build-arg SGLANG_NEAREST_RELEASE=$(SGLANG_NEAREST_RELEASE) \
	  --build-arg SGLANG_ROUTER_VERSION=$(SGLANG_ROUTER_VERSION) \
	  --build-arg BUNDLE_VERSION=$(BUNDLE_VERSION) \
	  --build-arg WHEELS_ONLY=$(WHEELS_ONLY) \
	  --build-arg GITHUB_MIRROR=$(GITHUB_MIRROR) \
	  --build-arg MOONCAKE_SOURCE=$(MOONCAKE_SOURCE) \
	  --build-arg SGLANG_SOURCE=$(SGLANG_SOURCE) \
	  $(if $(EXTRA_CA),--secret id=extra_ca$(,)src=$(EXTRA_CA)) \
	  $(foreach v,HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy,$(if $($(v)),--build-arg $(v))) \
	  .

, := ,

lint: setup ## Lint every Dockerfile with hadolint (error level)
	$(HADOLINT) --failure-threshold error docker/*.Dockerfile

.PHONY: smoke-lock smoke-image-locked wheelhouse smoke-base smoke-image build-check source-trees build lint

# The Mooncake stage of the GPU image, proven without the CUDA base or GitHub:
# sources from a local clone (MOONCAKE_GIT, assembled by docker/source-tree.sh),
# a CUDA stand-in base (docker/cuda-substitute.Dockerfile), hash-locked tools.
mooncake-stage: ## Build the GPU image's Mooncake stage on a CUDA stand-in base (USE_CUDA=ON wheel into build/mooncake-stage/; 8-12 min on 2 cores)
	@MOONCAKE_COMMIT=$(MOONCAKE_COMMIT) MOONCAKE_CMAKE_FLAGS="$(MOONCAKE_CMAKE_FLAGS)" \
	  CUDA_VERSION=$(CUDA_VERSION) CUDA_SUBSTITUTE_WHEELS="$(CUDA_SUBSTITUTE_WHEELS)" \
	  CUDA_SUBSTITUTE_IMAGE=$(CUDA_SUBSTITUTE_IMAGE) SMOKE_BASE_LOCAL=$(SMOKE_BASE_LOCAL) \
	  SMOKE_DEBIAN_SUITE=$(SMOKE_DEBIAN_SUITE) SMOKE_PYTHON_VERSION=$(SMOKE_PYTHON_VERSION) \
	  MOONCAKE_GIT="$(MOONCAKE_GIT)" MOONCAKE_SUBMODULES="$(MOONCAKE_SUBMODULES)" PYTHON=$(PYTHON) \
	  bash docker/mooncake-stage.sh build/mooncake-stage

.PHONY: mooncake-stage

# The GPU image on this box: two GPUs, one TP rank's KV at every prompt length,
# GPU to GPU through the engine, every byte checked. RDMA when the host has it. The sizes are the published
# run's (SCENARIO, default h20-qwen3-235b-1p1d), given explicitly: `pdrepro gpu-check` alone defaults to the one-box scenario.
GPU_CHECK_ARGS ?=
MEMLOCK ?= -1
gpu-check: ## Run `pdrepro gpu-check` in the GPU image on this box for SCENARIO's sizes (needs 2 GPUs; GPU_CHECK_ARGS="--transport tcp ...")
	@mkdir -p results
	docker run --rm --gpus all --network host --ipc host --cap-add IPC_LOCK \
	  --ulimit memlock=$(MEMLOCK):$(MEMLOCK) \
	  $(if $(wildcard /dev/infiniband),--device /dev/infiniband) \
	  -v "$(CURDIR)/results:/results" -w / $(GPU_IMAGE) \
	  pdrepro gpu-check --scenario "$(SCENARIO)" --out /results/gpu-check-$$(date -u +%Y%m%dT%H%M%SZ) $(GPU_CHECK_ARGS)

.PHONY: gpu-check
