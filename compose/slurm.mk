# The SLURM proof, included by the top-level Makefile: a local cluster of
# three containers (controller + two compute nodes) runs the smoke's sides as
# one 2-node job from a script rendered like `pdrepro render --target slurm`.
#   make slurm-smoke                      # build images if needed, run, tear down
#   make slurm-smoke SLURM_SMOKE_ARGS="--prompt-lens 128,32768 --repeats 3"
#   make slurm-smoke SLURM_SMOKE_RUNTIME=host   # the sides on the nodes, not in containers
SLURM_SMOKE_RUNTIME ?= docker
SLURM_SMOKE_ARGS ?=

slurm-image: smoke-image ## Build the SLURM node image of the local test cluster (Debian slurmctld/slurmd + the smoke image)
	@base=$$(docker image inspect -f '{{index .Config.Labels "org.opencontainers.image.base.name"}}' $(SMOKE_IMAGE)) && \
	echo "slurm-image: $(SLURM_IMAGE) from $$base + $(SMOKE_IMAGE)" && \
	docker build -q -f docker/slurm.Dockerfile -t $(SLURM_IMAGE) \
	  --build-arg SMOKE_IMAGE=$(SMOKE_IMAGE) --build-arg SLURM_BASE=$$base \
	  --build-arg SLURM_DEB_VERSION=$(SLURM_DEB_VERSION) docker/slurm >/dev/null

slurm-smoke: setup slurm-image ## Run the smoke as a real 2-node SLURM job on a local 3-container cluster
	SLURM_IMAGE=$(SLURM_IMAGE) PYTHON=$(BIN)/python COMPOSE="$(COMPOSE)" SLURM_SMOKE_RUNTIME=$(SLURM_SMOKE_RUNTIME) \
	  SLURM_SMOKE_ARGS="$(SLURM_SMOKE_ARGS)" bash scripts/slurm-smoke.sh

.PHONY: slurm-image slurm-smoke
