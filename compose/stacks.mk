# Two-node launch targets, included by the top-level Makefile. The env files
# come from `make render`; compose reads them with --env-file.
SCENARIO ?= h20-qwen3-235b-1p1d
DEPLOY ?= deploy
PDREPRO ?= $(BIN)/pdrepro
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)
STACK_PROJECTS := pdrepro-prefill pdrepro-decode pdrepro-regular

render: setup ## Write the nodes' env files to DEPLOY/: make render PREFILL_IP=.. DECODE_IP=.. [MODEL=dir IB_DEVICES=json GPUS=0,1,..]
	$(PDREPRO) render --scenario $(SCENARIO) --prefill-ip "$(PREFILL_IP)" --decode-ip "$(DECODE_IP)" \
	  $(if $(MODEL),--model "$(MODEL)") $(if $(DATASET),--dataset "$(DATASET)") \
	  $(if $(GPUS),--gpus "$(GPUS)") $(if $(IB_DEVICES),--ib-devices "$(IB_DEVICES)") --out $(DEPLOY)

up-prefill: ## On the prefill node: start the prefill server; returns once it is healthy
	$(COMPOSE) -f compose/prefill.yaml --env-file $(DEPLOY)/prefill.env up -d --wait

up-decode: ## On the decode node, after up-prefill: start decode server + router; returns once the router is ready
	$(COMPOSE) -f compose/decode.yaml --env-file $(DEPLOY)/decode.env up -d --wait

down: ## Stop and remove this node's stack containers (the logs in LOG_DIR stay)
	@for p in $(STACK_PROJECTS); do $(COMPOSE) -p $$p down; done

.PHONY: render up-prefill up-decode down
