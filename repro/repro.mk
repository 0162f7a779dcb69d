# `make repro`, included by the top-level Makefile. Run it on the decode node
# once `make up-prefill` (prefill node) and `make up-decode` (here) are up.
# Values come from DEPLOY/decode.env, or decode-0.env with more nodes (written by `make render`); ROUTER,
# SCENARIO and RUN override them. The prefill server's log is read from the
# prefill node's Docker engine over ssh unless PREFILL_LOGS names a folder.
REPRO_STAMP := $(shell date +%Y%m%d-%H%M%S)
RUN ?= runs/$(REPRO_STAMP)
ROUTER ?=
PREFILL_LOGS ?=
SWEEP_ARGS ?=
SKIP_DOCTOR ?=
# The prefill node's record (`make node-record ROLE=prefill` there), copied to this path on the decode node:
# `make repro` keeps it as RUN/nodes/prefill.json beside this node's and checks the pair before the sweep.
PREFILL_RECORD ?= $(DEPLOY)/nodes/prefill.json
ROLE ?=
PYTEST ?= $(BIN)/pytest

# $(call repro_steps,scenario,router URL,prefill URL,decode URL,dataset,more repro options,run dir):
# what `make repro` and `make onebox-repro` both run once their env file is read
# (MODEL_PATH, GPU_IMAGE, LOG_DIR come from it): `pdrepro repro`, the one pipeline
# (sweep, analyze, the pytest gates, then the first non-zero status; src/pdrepro/pipeline.py).
define repro_steps
$(PDREPRO) repro --scenario "$(1)" --router "$(2)" \
  --prefill "$(3)" --decode "$(4)" \
  --model-path "$$MODEL_PATH" --dataset-path "$(5)" --image "$$GPU_IMAGE" \
  --logs-from "$$LOG_DIR" $(6) --out "$(7)" --gates repro/ --pytest "$(PYTEST)" --sweep-args="$(SWEEP_ARGS)"
endef

repro: setup ## On the decode node with the stack up: doctor, sweep, analyze, gates (ROUTER=URL SCENARIO=name RUN=dir SKIP_DOCTOR=1)
	@set -uo pipefail; \
	env_file="$(DEPLOY)/decode.env"; \
	# xPyD: each node has its own file, and decode-0 runs the router. \
	if [ ! -f "$$env_file" ] && [ -f "$(DEPLOY)/decode-0.env" ]; then env_file="$(DEPLOY)/decode-0.env"; fi; \
	if [ -f "$$env_file" ]; then set -a; . "$$env_file"; set +a; \
	else echo "make repro: no $$env_file; run make render first" >&2; exit 2; fi; \
	router="$(ROUTER)"; router="$${router:-http://$$DECODE_IP:$$ROUTER_PORT}"; \
	prefill_logs="$(PREFILL_LOGS)"; prefill_logs="$${prefill_logs:-docker:ssh://$$PREFILL_IP}"; \
	$(call repro_steps,$(SCENARIO),$$router,http://$$PREFILL_IP:$$PREFILL_PORT,http://$$DECODE_IP:$$DECODE_PORT,$$DATASET_PATH,--prefill-logs-from "$$prefill_logs" $(if $(SKIP_DOCTOR),,--preflight decode --node-record "$(PREFILL_RECORD)" --deploy "$(DEPLOY)"),$(RUN))

node-record: setup ## On a node before its stack starts: write its record to DEPLOY/nodes/ROLE.json (ROLE=prefill|decode)
	@set -uo pipefail; \
	case "$(ROLE)" in prefill|decode) ;; *) echo "make node-record: give ROLE=prefill or ROLE=decode" >&2; exit 2;; esac; \
	env_file="$(DEPLOY)/$(ROLE).env"; \
	if [ ! -f "$$env_file" ] && [ -f "$(DEPLOY)/$(ROLE)-0.env" ]; then env_file="$(DEPLOY)/$(ROLE)-0.env"; fi; \
	if [ -f "$$env_file" ]; then set -a; . "$$env_file"; set +a; \
	else echo "make node-record: no $$env_file; run make render first" >&2; exit 2; fi; \
	mkdir -p "$(DEPLOY)/nodes"; \
	$(PDREPRO) doctor --role "$(ROLE)" --scenario "$(SCENARIO)" --image "$$GPU_IMAGE" --out "$(DEPLOY)/nodes/$(ROLE).json"; \
	rc=$$?; echo "record: $(DEPLOY)/nodes/$(ROLE).json (doctor exit $$rc; the record is kept whatever the verdict)"; \
	[ -s "$(DEPLOY)/nodes/$(ROLE).json" ]

.PHONY: repro node-record
