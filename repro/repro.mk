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
PYTEST ?= $(BIN)/pytest

repro: setup ## On the decode node with the stack up: doctor, sweep, analyze, gates (ROUTER=URL SCENARIO=name RUN=dir)
	@set -uo pipefail; \
	env_file="$(DEPLOY)/decode.env"; \
	# xPyD: each node has its own file, and decode-0 runs the router. \
	if [ ! -f "$$env_file" ] && [ -f "$(DEPLOY)/decode-0.env" ]; then env_file="$(DEPLOY)/decode-0.env"; fi; \
	if [ -f "$$env_file" ]; then set -a; . "$$env_file"; set +a; \
	else echo "make repro: no $$env_file; run make render first" >&2; exit 2; fi; \
	router="$(ROUTER)"; router="$${router:-http://$$DECODE_IP:$$ROUTER_PORT}"; \
	prefill_logs="$(PREFILL_LOGS)"; prefill_logs="$${prefill_logs:-docker:ssh://$$PREFILL_IP}"; \
	if [ -z "$(SKIP_DOCTOR)" ]; then \
	  echo "== 1/4 preflight: pdrepro doctor --role decode (SKIP_DOCTOR=1 skips)"; \
	  $(PDREPRO) doctor --role decode --scenario "$(SCENARIO)" --model "$$MODEL_PATH" --dataset "$$DATASET_PATH" || exit $$?; \
	fi; \
	echo "== 2/4 sweep: $(SCENARIO) against $$router into $(RUN)"; \
	$(PDREPRO) sweep --scenario "$(SCENARIO)" --router "$$router" \
	  --prefill "http://$$PREFILL_IP:$$PREFILL_PORT" --decode "http://$$DECODE_IP:$$DECODE_PORT" \
	  --model-path "$$MODEL_PATH" --dataset-path "$$DATASET_PATH" --image "$$GPU_IMAGE" \
	  --logs-from "$$LOG_DIR" --prefill-logs-from "$$prefill_logs" --out "$(RUN)" --no-analyze $(SWEEP_ARGS); \
	rc=$$?; if [ $$rc -eq 2 ]; then exit 2; fi; \
	# A failed length (sweep exit 1) is analysed and gated like the rest: the gates name it. \
	echo "== 3/4 analyze $(RUN)"; \
	$(PDREPRO) analyze "$(RUN)"; analyzed=$$?; \
	echo "== 4/4 gates: pytest repro/ --run-dir $(RUN)"; \
	$(PYTEST) repro/ --run-dir "$(RUN)" -p no:cacheprovider -q; gates=$$?; \
	echo "report: $(RUN)/report.md   gates: $(RUN)/junit.xml"; \
	for status in $$rc $$analyzed $$gates; do [ $$status -eq 0 ] || exit $$status; done

.PHONY: repro
