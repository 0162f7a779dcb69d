"""The analysis reads each server log through the run's backend: the same logs say TCP to the backend whose
lines they hold and nothing to the other, and the engine-found devices come from that backend's reading."""

from __future__ import annotations

import json

from fakecluster import mooncake_startup

from pdrepro.analysis.transport_evidence import transport_facts
from pdrepro.backends import backend
from pdrepro.rundir import RunDir
from pdrepro.scenario.model import load_scenario
from pdrepro.scenario.seams import run_backend

START = "[2026-12-01 10:00:00] server_args=ServerArgs(disaggregation_mode='{role}')\n"
# NIXL's start-up line and a UCX lane line in the formats parsers/nixl_log documents (a fixture, built here).
NIXL = ("[2026-12-01 10:00:01] NIXL KVManager initialized with backend: UCX\n"
        "[1764583200.0] [host:1:0] ucp_worker.c:2041 UCX  INFO  ep cfg#2 rma_am(tcp/lo) am(tcp/lo tcp/eth0)\n")
RDMA_NIXL = NIXL.replace("am(tcp/lo tcp/eth0)", "am(rc_mlx5/mlx5_0:1)")


def _run(tmp_path, text: str) -> RunDir:
    logs = tmp_path / "run" / "logs"
    logs.mkdir(parents=True)
    for role in ("prefill", "decode"):
        (logs / f"{role}.log").write_text(START.format(role=role) + text)
    return RunDir(tmp_path / "run")


def test_a_nixl_run_is_judged_by_nixl_lines(tmp_path):
    run = _run(tmp_path, NIXL)
    assert transport_facts(run, None, backend("nixl"))[0] == "tcp"
    assert transport_facts(run, None, backend("mooncake"))[0] == "unknown"


def test_a_mooncake_run_is_judged_by_mooncake_lines(tmp_path):
    run = _run(tmp_path, "\n".join(mooncake_startup("tcp")) + "\n")
    assert transport_facts(run, None, backend("mooncake"))[0] == "tcp"
    assert transport_facts(run, None, backend("nixl"))[0] == "unknown"


def test_the_stack_record_names_the_backend_the_analysis_reads_by(tmp_path):
    run = _run(tmp_path, RDMA_NIXL)
    scenario = load_scenario("onebox-qwen25-0.5b")
    assert transport_facts(run, None, run_backend(run.root, scenario))[0] == "unknown"  # read as the scenario's
    (run.root / "stack.json").write_text(json.dumps({"transfer_backend": "nixl"}))
    used, evidence = transport_facts(run, None, run_backend(run.root, scenario))
    assert used == "rdma" and evidence["rdma_devices"]["found"] is True
