# pdrepro: run `make help` for the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Shared by the launch (compose/stacks.mk) and repro (repro/repro.mk) targets.
SCENARIO ?= h20-qwen3-235b-1p1d
DEPLOY ?= deploy
PDREPRO ?= $(BIN)/pdrepro

# Image targets (build, wheelhouse, smoke-base, smoke-image, lint) and pins.
include docker/images.mk
# The GPU image's Python lock and its wheelhouse (lock, gpu-wheelhouse).
include docker/lock.mk
# Two-node launch targets (render, up-prefill, up-decode, down).
include compose/stacks.mk
# Reproduction on the two nodes (repro: doctor, sweep, analyze, gates).
include repro/repro.mk
# The smoke test without GPUs (smoke).
include compose/smoke.mk
# The SLURM proof on a local 3-container cluster (slurm-image, slurm-smoke).
include compose/slurm.mk

.DEFAULT_GOAL := help

help: ## List the targets with what they do
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sort | \
	  awk 'BEGIN {FS = ":.*## "}; {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}'

$(BIN)/pdrepro: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $@

setup: $(BIN)/pdrepro ## Create .venv with the bundle and its test tools

# Progress as a count of finished tests with the time so far (tests/elapsed.py), the ten slowest at the end.
# Workers for `make test`: the cores, but at least 4. Much of the suite waits on containers, a local SLURM
# job and child processes rather than computing, so on a 2-core machine 4 workers overlap those waits
# (the whole suite with its Docker tests on one 2-core machine: 10 min 20 s with 4 workers for 2258 tests).
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 4); [ "$$n" -lt 4 ] && n=4; echo $$n)

test: setup ## Run the bundle's own tests (in parallel), showing progress; print the slowest tests and line coverage
	$(BIN)/pytest -n $(TEST_WORKERS) -o console_output_style=count --durations=10 --cov=pdrepro --cov-report=term

adversarial-deep: setup ## Run the adversarial suite with many more hostile examples and fresh randomness (no seed)
	PDREPRO_HYPOTHESIS=deep $(BIN)/pytest -n auto tests/adversarial

SOAK_RUNS ?= 30
signals-soak: setup ## Run the sweep's SIGTERM test (the 15-143 case, which once hung one run in seven) 30 times in a row
	@for i in $$(seq 1 $(SOAK_RUNS)); do \
	  out=$$($(BIN)/pytest -q -p no:cacheprovider tests/sweep/test_sweep_signals.py -k 15-143 2>&1) || \
	    { echo "$$out"; echo "signals-soak: run $$i of $(SOAK_RUNS) failed"; exit 1; }; \
	  echo "signals-soak: run $$i of $(SOAK_RUNS): $$(echo "$$out" | tail -1)"; \
	done

BENCH_LOG_MB ?= 500
bench-analysis-memory: setup ## Print the peak memory of `pdrepro analyze` on a 500 MB prefill log of request-stats lines
	$(BIN)/python scripts/bench_analysis_memory.py --size-mb $(BENCH_LOG_MB)

bench-help: setup ## Print the CPU seconds of `pdrepro --help` and of each command's --help (the worst of 5 runs; budget 0.3 s)
	$(BIN)/python scripts/bench_help.py

# Heavy end-to-end signal tests (tests/signalse2e.py marks them: whole runs on the stand-in stack stopped by real
# signals, or killed, and resumed; the other signals of a test `make test` runs once): `make test` skips them and
# keeps a fast representative of each; this target runs them with the signal tests they belong with.
SIGNALS_E2E ?= tests/commands/test_ab_resume_e2e.py tests/test_arms.py tests/commands/test_repro_signals.py \
	tests/sweep/test_sweep_wait_signals.py
signals-e2e: setup ## Run the signal tests with the heavy ones: runs stopped or killed just after a member measured everything, resumed
	PDREPRO_SIGNALS_E2E=1 $(BIN)/pytest -n 2 -p no:cacheprovider $(SIGNALS_E2E)

schemas: setup ## Regenerate the JSON Schemas of scenario files and summary.json from their models
	$(BIN)/pdrepro schema --write src/pdrepro/schemas

docs: setup ## Regenerate docs/reference (commands, scenario file, summary.json) from the CLI and the schemas
	$(BIN)/pdrepro docs --write docs/reference

# The knob lists (src/pdrepro/knobdata) from source trees given by path: an SGLang checkout or its release
# wheel unpacked (SGLANG_REF names which), a Mooncake checkout at the pin. Reads them; writes only the lists.
# SGLANG_PIN_SRC (optional): a checkout at SGLANG_COMMIT, whose server flags count beside the release's.
SGLANG_REF ?= v$(SGLANG_NEAREST_RELEASE)
MOONCAKE_REF ?= $(MOONCAKE_COMMIT)
knobs: ## Regenerate the knob lists from source: make knobs SGLANG_SRC=<checkout> MOONCAKE_SRC=<checkout>
	@test -n "$(SGLANG_SRC)" -a -n "$(MOONCAKE_SRC)" || { echo "make knobs: give SGLANG_SRC=<sglang tree> MOONCAKE_SRC=<Mooncake tree>" >&2; exit 2; }
	python3 scripts/knobgen.py --sglang-src "$(SGLANG_SRC)" --sglang-ref "$(SGLANG_REF)" \
		--mooncake-src "$(MOONCAKE_SRC)" --mooncake-ref "$(MOONCAKE_REF)" --out src/pdrepro/knobdata \
		$(if $(SGLANG_PIN_SRC),--sglang-flags-src "$(SGLANG_COMMIT)=$(SGLANG_PIN_SRC)")

.PHONY: help setup test adversarial-deep signals-soak signals-e2e bench-analysis-memory bench-help schemas docs knobs
