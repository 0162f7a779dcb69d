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
# on failure show the containers' last log lines, which say why.
define stack_up
	@test -f $(DEPLOY)/$(2).env || { echo "make $(1): no $(DEPLOY)/$(2).env; run make render first (or copy it here)" >&2; exit 2; }
	$(COMPOSE) -f compose/$(2).yaml --env-file $(DEPLOY)/$(2).env up -d --wait || { \
	  echo "make $(1): the $(2) stack did not become healthy; last log lines:" >&2; \
	  $(COMPOSE) -f compose/$(2).yaml --env-file $(DEPLOY)/$(2).env logs --no-color --tail 40 >&2; exit 1; }
endef

up-prefill: ## On the prefill node: start the prefill server; returns once it is healthy
	$(call stack_up,up-prefill,prefill)

up-decode: ## On the decode node, after up-prefill: start decode server + router; returns once the router is ready
	$(call stack_up,up-decode,decode)

down: ## Stop and remove this node's stack containers (the logs in LOG_DIR stay)
	@for p in $(STACK_PROJECTS); do $(COMPOSE) -p $$p down; done

.PHONY: render up-prefill up-decode down
