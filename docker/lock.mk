# The GPU image's hash-locked Python environment and the air-gapped wheelhouse
# filled from it. Included by the top-level Makefile after docker/images.mk,
# which reads the pins.
GPU_LOCK := docker/gpu-requirements.lock
GPU_LOCK_IN := docker/gpu-requirements.in
MOONCAKE_BUILD_LOCK := docker/mooncake-build-tools.lock
MOONCAKE_BUILD_IN := docker/mooncake-build-tools.in
UV := $(BIN)/uv
# Resolved for the image, not for this host: wheels only (the image compiles
# no Python package), for its Python and glibc, PyPI as it
# stood at the pin (--upgrade: the answer depends on the inputs only, not on
# the lock being replaced).
# NIXL came out after that date (nixl 1.5.1's wheels were uploaded to PyPI on 2026-10-26): its two
# wheels alone are taken as PyPI stood when the bundle took them up (their pins are exact), and the
# CUDA 12 backend its meta package names is overridden away (docker/gpu-overrides.txt).
GPU_LOCK_NIXL_NEWER := 2026-12-01T00:00:00Z
GPU_OVERRIDES := docker/gpu-overrides.txt
UV_LOCK_FLAGS := --quiet --upgrade --generate-hashes --only-binary :all: --custom-compile-command "make lock" \
  --python-version $(GPU_PYTHON_VERSION) --python-platform x86_64-$(GPU_WHEEL_PLATFORM:_x86_64=) \
  --exclude-newer $(GPU_LOCK_EXCLUDE_NEWER)

# The router's pin and the bundle's own dependencies keep their one place
# (versions.env, pyproject.toml) and are handed to the resolver from there.
lock: setup ## Re-resolve docker/gpu-requirements.lock and the Mooncake build tools' lock from PyPI (uv)
	$(BIN)/pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"
	echo "sglang-router==$(SGLANG_ROUTER_VERSION)" | $(UV) pip compile $(UV_LOCK_FLAGS) \
	  --exclude-newer-package nixl=$(GPU_LOCK_NIXL_NEWER) --exclude-newer-package nixl-cu13=$(GPU_LOCK_NIXL_NEWER) \
	  --override $(GPU_OVERRIDES) -o $(GPU_LOCK) $(GPU_LOCK_IN) - pyproject.toml
	$(UV) pip compile $(UV_LOCK_FLAGS) --constraint $(GPU_LOCK) \
	  -o $(MOONCAKE_BUILD_LOCK) $(MOONCAKE_BUILD_IN)
	@echo "lock: $$(grep -c '^[A-Za-z0-9]' $(GPU_LOCK)) packages in $(GPU_LOCK)"

# Every wheel the GPU image installs, checked against the lock's hashes, for
# `make build WHEELS_ONLY=1` on a site without PyPI (several GB: torch and
# the CUDA 13 libraries).
# pip takes a manylinux tag literally: list every glibc tag the image's glibc accepts.
GPU_GLIBC_MINOR := $(word 3,$(subst _, ,$(GPU_WHEEL_PLATFORM)))
GPU_PIP_PLATFORMS := $(foreach v,$(shell seq $(GPU_GLIBC_MINOR) -1 5),--platform manylinux_2_$(v)_x86_64)
gpu-wheelhouse: ## Download every wheel of docker/gpu-requirements.lock into wheelhouse/gpu/ (air-gapped GPU build)
	@mkdir -p $(WHEELHOUSE)/gpu
	$(PYTHON) -m pip download --disable-pip-version-check --require-hashes --no-deps \
	  --only-binary=:all: --implementation cp --python-version $(GPU_PYTHON_VERSION) \
	  --abi cp$(subst .,,$(GPU_PYTHON_VERSION)) $(GPU_PIP_PLATFORMS) \
	  -d $(WHEELHOUSE)/gpu -r $(GPU_LOCK)

.PHONY: lock gpu-wheelhouse

# The GPU image's environment without Docker, for the host launcher (`pdrepro stack up`) on a
# bare-metal site: scripts/gpu-venv.sh does the work and says each step.
#   make gpu-venv                              # .venv-gpu from the lock, online
#   make gpu-venv WHEELHOUSE=/media/wheels     # offline, from /media/wheels/gpu (make gpu-wheelhouse)
#   make gpu-venv SERVING_ONLY=1 VENV_SYSTEM_SITE=1   # the serving subset, on a machine with its own torch
PYTHON312 ?= python3.12
GPU_VENV ?= .venv-gpu
LOCK ?= $(GPU_LOCK)
# The Python the lock is resolved for (a LOCK= for another Python says its own).
LOCK_PYTHON ?= $(GPU_PYTHON_VERSION)
GPU_SERVING_EXCLUDE ?= docker/gpu-serving-exclude.txt
# SGLang at the pin from its checkout (make source-trees SGLANG_GIT=...), else the nearest release's wheel.
SGLANG ?= $(if $(wildcard build/sglang-src/python/pyproject.toml),build/sglang-src,sglang==$(SGLANG_NEAREST_RELEASE))
# Mooncake: the wheel built at the pin (make mooncake-stage), else the CUDA 13 release that ran on the H200.
MOONCAKE ?= $(or $(firstword $(wildcard build/mooncake-wheel/*.whl)),$(GPU_VENV_MOONCAKE_WHEEL)==$(GPU_VENV_MOONCAKE_VERSION))
BUNDLE ?= dist/pdrepro-$(BUNDLE_VERSION)-py3-none-any.whl
IMPORTS ?= sglang.srt.entrypoints.http_server sglang_router mooncake.engine nixl pdrepro
gpu-venv: ## Build .venv-gpu for the host launcher from the GPU lock, hashes required, without Docker (PYTHON312, WHEELHOUSE, SERVING_ONLY, VENV_SYSTEM_SITE)
	$(if $(filter none,$(BUNDLE)),,@rm -f dist/pdrepro-*.whl)
	$(if $(filter none,$(BUNDLE)),,$(PYTHON) -m pip wheel --quiet --disable-pip-version-check --no-deps -w dist .)
	bash scripts/gpu-venv.sh --python "$(PYTHON312)" --expect-python "$(LOCK_PYTHON)" --venv "$(GPU_VENV)" \
	  --lock "$(LOCK)" $(if $(filter command line environment,$(origin WHEELHOUSE)),--wheelhouse "$(WHEELHOUSE)/gpu") \
	  $(if $(VENV_SYSTEM_SITE),--system-site-packages) $(if $(SERVING_ONLY),--exclude "$(GPU_SERVING_EXCLUDE)") \
	  --sglang "$(SGLANG)" --sglang-version "$(SGLANG_NEAREST_RELEASE)+g$(SGLANG_COMMIT)" \
	  --mooncake "$(MOONCAKE)" --bundle "$(BUNDLE)" --imports "$(IMPORTS)"

.PHONY: gpu-venv
