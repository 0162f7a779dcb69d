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
# Every lane on RDMA (UCX's rma_am lists the am lane's transport, so a TCP rma_am beside an RDMA am is no RDMA run).
RDMA_NIXL = NIXL.replace("tcp/lo tcp/eth0", "rc_mlx5/mlx5_0:1").replace("tcp/lo", "rc_mlx5/mlx5_0:1")


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


# Another backend's start-up lines in the same logs ----------------------------------------------------------

# The sweep's host with no RDMA device, both servers reached on loopback: the run's own lists say "no device".
NO_DEVICE_HOST = {"host": {"hostname": "box", "nics": {}},
                  "endpoints": {"prefill": "http://127.0.0.1:30000", "decode": "http://127.0.0.1:30001"}}


def _verdict(used, evidence) -> str:
    from pdrepro.scenario.model import load_scenario
    from pdrepro.verdicts.gates import evaluate

    scenario = load_scenario("onebox-qwen25-0.5b")  # transport: any
    summary = {"schema_version": 1, "source": "sglang", "transport": used, "transport_evidence": evidence,
               "rows": [], "issues": [], "scenario": scenario.to_dict(), "scenario_fingerprint": scenario.fingerprint}
    return next(r.verdict for r in evaluate(summary, scenario) if r.name == "transport")


def test_a_nixl_tcp_run_on_a_box_without_devices_is_not_applicable(tmp_path):
    run = _run(tmp_path, NIXL)
    used, evidence = transport_facts(run, NO_DEVICE_HOST, backend("nixl"))
    assert (used, evidence["rdma_devices"]["found"], evidence["conflicts"]) == ("tcp", False, [])
    assert _verdict(used, evidence) == "N/A"


def test_mooncake_rdma_lines_in_a_nixl_runs_logs_contradict_no_rdma_device(tmp_path):
    run = _run(tmp_path, NIXL + "\n".join(mooncake_startup("rdma")) + "\n")
    used, evidence = transport_facts(run, NO_DEVICE_HOST, backend("nixl"))
    assert used == "tcp"  # NIXL's own lines still say TCP
    assert evidence["rdma_devices"]["found"] is not False
    named = [c for c in evidence["conflicts"] if "Mooncake" in c and "NIXL" in c]
    assert {c.split(":", 1)[0] for c in named} == {"prefill.log", "decode.log"}
    assert any("mlx5_0" in c for c in named)
    assert _verdict(used, evidence) == "FAIL"


def test_nixl_rdma_lanes_in_a_mooncake_tcp_runs_logs_contradict_it_too(tmp_path):
    run = _run(tmp_path, "\n".join(mooncake_startup("tcp")) + "\n" + RDMA_NIXL)
    used, evidence = transport_facts(run, NO_DEVICE_HOST, backend("mooncake_tcp"))
    assert used == "tcp" and any("NIXL" in c for c in evidence["conflicts"])
    assert _verdict(used, evidence) == "FAIL"


def test_a_backends_own_variant_is_no_other_backend(tmp_path):
    # Mooncake and Mooncake over TCP read the same lines: a Mooncake RDMA run is not contradicted by itself.
    run = _run(tmp_path, "\n".join(mooncake_startup("rdma")) + "\n")
    used, evidence = transport_facts(run, None, backend("mooncake"))
    assert used == "rdma" and evidence["conflicts"] == []
