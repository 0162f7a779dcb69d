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

# $(call repro_steps,scenario,router URL,prefill URL,decode URL,dataset,more sweep options,run dir,say):
# what `make repro` and `make onebox-repro` both run once their env file is read
# (MODEL_PATH, GPU_IMAGE, LOG_DIR come from it): sweep, analyze, the pytest gates,
# then the first non-zero status. A sweep stopped by bad input or environment
# (exit 2) ends it there; a failed length (sweep exit 1) is analysed and gated
# like the rest: the gates name it. say announces each step (echo, or : for quiet).
define repro_steps
$(8) "== 2/4 sweep: $(1) against $(2) into $(7)"; \
$(PDREPRO) sweep --scenario "$(1)" --router "$(2)" \
  --prefill "$(3)" --decode "$(4)" \
  --model-path "$$MODEL_PATH" --dataset-path "$(5)" --image "$$GPU_IMAGE" \
  --logs-from "$$LOG_DIR" $(6) --out "$(7)" --no-analyze $(SWEEP_ARGS); \
rc=$$?; if [ $$rc -eq 2 ]; then exit 2; fi; \
$(8) "== 3/4 analyze $(7)"; \
$(PDREPRO) analyze "$(7)"; analyzed=$$?; \
$(8) "== 4/4 gates: pytest repro/ --run-dir $(7)"; \
$(PYTEST) repro/ --run-dir "$(7)" -p no:cacheprovider -q; gates=$$?; \
$(8) "report: $(7)/report.md   gates: $(7)/junit.xml"; \
for status in $$rc $$analyzed $$gates; do [ $$status -eq 0 ] || exit $$status; done
endef

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
	$(call repro_steps,$(SCENARIO),$$router,http://$$PREFILL_IP:$$PREFILL_PORT,http://$$DECODE_IP:$$DECODE_PORT,$$DATASET_PATH,--prefill-logs-from "$$prefill_logs",$(RUN),echo)

.PHONY: repro
