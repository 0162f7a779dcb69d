# Two-node launch targets, included by the top-level Makefile. `make render` writes each node's compose
# file (the launch plan's commands, whole) and env file into DEPLOY; compose reads both.
# The v2 plugin, else the standalone binary.
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)
STACK_PROJECTS := pdrepro-prefill pdrepro-decode pdrepro-regular

render: setup ## Write the nodes' compose and env files to DEPLOY/: make render PREFILL_IP=.. DECODE_IP=.. [MODEL=dir IB_DEVICES=json GPUS=0,1,..]
	$(PDREPRO) render --scenario $(SCENARIO) --prefill-ip "$(PREFILL_IP)" --decode-ip "$(DECODE_IP)" \
	  $(if $(MODEL),--model "$(MODEL)") $(if $(DATASET),--dataset "$(DATASET)") \
	  $(if $(GPUS),--gpus "$(GPUS)") $(if $(IB_DEVICES),--ib-devices "$(IB_DEVICES)") --out $(DEPLOY)

# $(call stack_up,target,stack): start a stack and wait for its health checks;
# on failure show the containers' last log lines, which say why. An xPyD render
# writes one compose and env file per node (prefill-0.yaml, prefill-0.env, ...): NODE=<i> picks this node's.
NODE ?=
stack_file = $(DEPLOY)/$(1)$(if $(NODE),-$(NODE)).$(2)
stack_compose = $(COMPOSE) -f $(call stack_file,$(1),yaml) --env-file $(call stack_file,$(1),env)
define stack_up
	@test -f $(call stack_file,$(2),yaml) && test -f $(call stack_file,$(2),env) || { \
	  if [ -z "$(NODE)" ] && [ -f $(DEPLOY)/$(2)-0.yaml ]; then \
	    echo "make $(1): $(DEPLOY) holds one compose file per $(2) node ($(2)-0.yaml, ...); give this node's: make $(1) NODE=<i>" >&2; \
	  else echo "make $(1): no $(call stack_file,$(2),yaml) or its .env; run make render first (or copy them here)" >&2; fi; exit 2; }
	$(call stack_compose,$(2)) up -d --wait || { \
	  echo "make $(1): the $(2) stack did not become healthy; last log lines:" >&2; \
	  $(call stack_compose,$(2)) logs --no-color --tail 40 >&2; exit 1; }
endef

up-prefill: ## On the prefill node: start the prefill server (xPyD: NODE=<i>); returns once it is healthy
	$(call stack_up,up-prefill,prefill)

up-decode: ## On the decode node, after up-prefill: start decode server (+ router on NODE=0 / 1P1D); returns once ready
	$(call stack_up,up-decode,decode)

down: ## Stop and remove this node's stack containers (the logs in LOG_DIR stay)
	@for p in $(STACK_PROJECTS); do $(COMPOSE) -p $$p down; done

# ---- one box with two or more GPUs -----------------------------------------
ONEBOX_SCENARIO ?= onebox-qwen25-0.5b
ONEBOX_DEPLOY ?= $(DEPLOY)/onebox
ONEBOX_IP ?= 127.0.0.1
ONEBOX_GPUS ?= 0,1
# Non-empty: KV over TCP even when the node has RDMA devices (rendered with --force-tcp).
FORCE_TCP ?=
# One GPU id: both servers share it, and the rendered onebox.yaml starts decode once prefill is healthy.
# Each role's node record is written first (doctor --out, whatever its verdict; a record a failed doctor could
# not write is gone, never an older one left in its place), and `make onebox-repro` pair-checks and keeps both.

onebox: setup ## One node: real prefill+decode+router on a small model: make onebox MODEL=dir [ONEBOX_GPUS=0,1 or 0 FORCE_TCP=1]
	@test -n "$(MODEL)" || { echo "make onebox: pass MODEL=/path/to/model (the small model's folder, e.g. Qwen2.5-0.5B-Instruct, holding config.json)" >&2; exit 2; }
	@set -u; if [ -d /dev/infiniband ] && [ -z "$(FORCE_TCP)" ]; then \
	  echo "make onebox: RDMA devices found: KV moves over RDMA"; tcp=; \
	else \
	  echo "make onebox: no /dev/infiniband (or FORCE_TCP set): KV moves over TCP (--force-tcp)"; tcp=--force-tcp; \
	fi; \
	$(PDREPRO) render --target onebox --scenario $(ONEBOX_SCENARIO) --prefill-ip $(ONEBOX_IP) --model "$(MODEL)" \
	  $(if $(DATASET),--dataset "$(DATASET)") --gpus $(ONEBOX_GPUS) $$tcp --out $(ONEBOX_DEPLOY) || exit $$?; \
	image=$$(sed -n 's/^GPU_IMAGE=//p' $(ONEBOX_DEPLOY)/onebox.env); mkdir -p $(ONEBOX_DEPLOY)/nodes; \
	for role in prefill decode; do rm -f $(ONEBOX_DEPLOY)/nodes/$$role.json; \
	  $(PDREPRO) doctor --role $$role --scenario $(ONEBOX_SCENARIO) --model "$(MODEL)" --image "$$image" \
	    --out $(ONEBOX_DEPLOY)/nodes/$$role.json >/dev/null; rc=$$?; \
	  if [ -f $(ONEBOX_DEPLOY)/nodes/$$role.json ] && [ $$rc -le 1 ]; then \
	    echo "make onebox: $$role node record $(ONEBOX_DEPLOY)/nodes/$$role.json (doctor exit $$rc: kept whatever its verdict)"; \
	  else echo "make onebox: no $$role node record (doctor exit $$rc); the stack starts all the same" >&2; fi; \
	done; \
	cmd="$(COMPOSE) -f $(ONEBOX_DEPLOY)/onebox.yaml"; \
	if [ -z "$$tcp" ] && [ -f $(ONEBOX_DEPLOY)/onebox.rdma.yaml ]; then cmd="$$cmd -f $(ONEBOX_DEPLOY)/onebox.rdma.yaml"; fi; \
	cmd="$$cmd --env-file $(ONEBOX_DEPLOY)/onebox.env"; \
	$$cmd up -d --wait || { echo "make onebox: the stack did not become healthy; last log lines:" >&2; \
	  $$cmd logs --no-color --tail 40 >&2; exit 1; }; \
	echo "make onebox: router ready at http://$(ONEBOX_IP):8000; next: make onebox-repro DATASET=..."

onebox-repro: setup ## With `make onebox` up: sweep, analyze and gates against it (DATASET=ShareGPT json)
	@test -n "$(DATASET)" || { echo "make onebox-repro: pass DATASET=/path/to/ShareGPT_V3_unfiltered_cleaned_split.json" >&2; exit 2; }
	@set -a; . $(ONEBOX_DEPLOY)/onebox.env; set +a; \
	records=; for role in prefill decode; do f=$(ONEBOX_DEPLOY)/nodes/$$role.json; \
	  if [ -f $$f ]; then records="$$records --node-record $$f"; fi; done; \
	$(call repro_steps,$(ONEBOX_SCENARIO),http://$$BOX_IP:$$ROUTER_PORT,http://$$BOX_IP:$$PREFILL_PORT,http://$$BOX_IP:$$DECODE_PORT,$(DATASET),--quiet $$records,$(RUN))

onebox-host-proof: ## GPU box without Docker: offline model, stack up, engine ceiling, sweep, check, gates, stack down (GPU_PYTHON: default .venv-gpu's, from make gpu-venv)
	PYTHON="$(or $(GPU_PYTHON),$(if $(wildcard $(GPU_VENV)/bin/python),$(GPU_VENV)/bin/python,python3))" bash scripts/onebox-host-proof.sh

onebox-down: ## Stop and remove the one-box stack (the logs in LOG_DIR stay)
	$(COMPOSE) -p pdrepro-onebox down

.PHONY: render up-prefill up-decode down onebox onebox-repro onebox-host-proof onebox-down
