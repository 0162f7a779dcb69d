# The main job on a machine without GPUs, included by the top-level Makefile.
# Extra options go through SMOKE_ARGS, e.g.
#   make smoke SMOKE_ARGS="--prompt-lens 128,4096,32768 --repeats 3"
#   make smoke SMOKE_ARGS="--transport rdma"      # after scripts/softroce.sh up
# SMOKE_MEMLOCK (bytes, -1 = unlimited) overrides the containers' memlock;
# by default it follows the local Docker engine's own cap.
SMOKE_ARGS ?=

smoke: setup smoke-image ## Main job, no GPU needed: KV-sized transfers through Mooncake between two containers
	$(BIN)/pdrepro smoke --image $(SMOKE_IMAGE) $(SMOKE_ARGS)
	@echo "smoke: report in results/latest/report.md, plots in results/latest/plots/, figures in results/latest/summary.json"

.PHONY: smoke
