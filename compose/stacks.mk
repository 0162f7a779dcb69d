# Two-node launch targets, included by the top-level Makefile. The env files
# come from `make render`; compose reads them with --env-file.
# The v2 plugin, else the standalone binary.
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)
STACK_PROJECTS := pdrepro-prefill pdrepro-decode pdrepro-regular

render: setup ## Write the nodes' env files to DEPLOY/: make render PREFILL_IP=.. DECODE_IP=.. [MODEL=dir IB_DEVICES=json GPUS=0,1,..]
	$(PDREPRO) render --scenario $(SCENARIO) --prefill-ip "$(PREFILL_IP)" --decode-ip "$(DECODE_IP)" \
	  $(if $(MODEL),--model "$(MODEL)") $(if $(DATASET),--dataset "$(DATASET)") \
	  $(if $(GPUS),--gpus "$(GPUS)") $(if $(IB_DEVICES),--ib-devices "$(IB_DEVICES)") --out $(DEPLOY)

# $(call stack_up,target,stack): start a stack and wait for its health checks;
# on failure show the containers' last log lines, which say why. An xPyD render
# writes one env file per node (prefill-0.env, ...): NODE=<i> picks this node's.
NODE ?=
stack_env = $(DEPLOY)/$(1)$(if $(NODE),-$(NODE)).env
define stack_up
	@test -f $(call stack_env,$(2)) || { \
	  if [ -z "$(NODE)" ] && [ -f $(DEPLOY)/$(2)-0.env ]; then \
	    echo "make $(1): $(DEPLOY) holds one env file per $(2) node ($(2)-0.env, ...); give this node's: make $(1) NODE=<i>" >&2; \
	  else echo "make $(1): no $(call stack_env,$(2)); run make render first (or copy it here)" >&2; fi; exit 2; }
	$(COMPOSE) -f compose/$(2).yaml --env-file $(call stack_env,$(2)) up -d --wait || { \
	  echo "make $(1): the $(2) stack did not become healthy; last log lines:" >&2; \
	  $(COMPOSE) -f compose/$(2).yaml --env-file $(call stack_env,$(2)) logs --no-color --tail 40 >&2; exit 1; }
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
# Non-empty: KV over TCP even when the node has RDMA devices.
FORCE_TCP ?=
# One GPU id: both servers share it, and decode starts once prefill is healthy (compose/onebox.onegpu.yaml).
ONEBOX_COMPOSE = $(COMPOSE) -f compose/onebox.yaml --env-file $(ONEBOX_DEPLOY)/onebox.env \
  $(if $(findstring $(comma),$(ONEBOX_GPUS)),,-f compose/onebox.onegpu.yaml)
comma := ,

onebox: setup ## One node: real SGLang prefill+decode+router on a small model: make onebox MODEL=dir [ONEBOX_GPUS=0,1 or 0 FORCE_TCP=1]
	@test -n "$(MODEL)" || { echo "make onebox: pass MODEL=/path/to/model (the small model's folder, e.g. Qwen2.5-0.5B-Instruct, holding config.json)" >&2; exit 2; }
	$(PDREPRO) render --target onebox --scenario $(ONEBOX_SCENARIO) --prefill-ip $(ONEBOX_IP) --model "$(MODEL)" \
	  $(if $(DATASET),--dataset "$(DATASET)") --gpus $(ONEBOX_GPUS) --out $(ONEBOX_DEPLOY)
	@set -u; if [ -d /dev/infiniband ] && [ -z "$(FORCE_TCP)" ]; then \
	  echo "make onebox: RDMA devices found: KV moves over RDMA"; \
	  cmd="$(ONEBOX_COMPOSE) -f compose/onebox.rdma.yaml"; unset MC_FORCE_TCP; \
	else \
	  echo "make onebox: no /dev/infiniband (or FORCE_TCP set): KV moves over TCP (MC_FORCE_TCP=1)"; \
	  cmd="$(ONEBOX_COMPOSE)"; export MC_FORCE_TCP=1; \
	fi; \
	$$cmd up -d --wait || { echo "make onebox: the stack did not become healthy; last log lines:" >&2; \
	  $$cmd logs --no-color --tail 40 >&2; exit 1; }; \
	echo "make onebox: router ready at http://$(ONEBOX_IP):8000; next: make onebox-repro DATASET=..."

onebox-repro: setup ## With `make onebox` up: sweep, analyze and gates against it (DATASET=ShareGPT json)
	@test -n "$(DATASET)" || { echo "make onebox-repro: pass DATASET=/path/to/ShareGPT_V3_unfiltered_cleaned_split.json" >&2; exit 2; }
	@set -a; . $(ONEBOX_DEPLOY)/onebox.env; set +a; \
	$(call repro_steps,$(ONEBOX_SCENARIO),http://$$BOX_IP:$$ROUTER_PORT,http://$$BOX_IP:$$PREFILL_PORT,http://$$BOX_IP:$$DECODE_PORT,$(DATASET),--quiet,$(RUN))

onebox-host-proof: ## GPU box without Docker: offline model, stack up, engine ceiling, sweep, check, gates, stack down (GPU_PYTHON: default .venv-gpu's, from make gpu-venv)
	PYTHON="$(or $(GPU_PYTHON),$(if $(wildcard $(GPU_VENV)/bin/python),$(GPU_VENV)/bin/python,python3))" bash scripts/onebox-host-proof.sh

onebox-down: ## Stop and remove the one-box stack (the logs in LOG_DIR stay)
	$(COMPOSE) -p pdrepro-onebox down

.PHONY: render up-prefill up-decode down onebox onebox-repro onebox-host-proof onebox-down
