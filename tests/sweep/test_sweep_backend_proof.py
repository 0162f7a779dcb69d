"""The sweep's transport proof reads each server log through the run's backend: a NIXL run by NIXL's lines,
a Mooncake run by Mooncake's; the backend is the stack record's where it names one, else the scenario's
(older runs record none and read as the scenario's default)."""

from __future__ import annotations

import json

import pytest
from fakecluster import mooncake_startup

from pdrepro.backends import backend
from pdrepro.core.errors import UserError
from pdrepro.scenario.model import load_scenario
from pdrepro.scenario.seams import run_backend
from pdrepro.sweep.rdma_proof import prove

# NIXL's start-up line and a UCX lane line in the formats parsers/nixl_log documents (a fixture, built here).
NIXL_TCP = ("[2026-12-01 10:00:00] NIXL KVManager initialized with backend: UCX\n"
            "[1764583200.0] [host:1:0] ucp_worker.c:2041 UCX  INFO  ep cfg#2 rma_am(tcp/lo) am(tcp/lo tcp/eth0)\n")
MOONCAKE_TCP = "\n".join(mooncake_startup("tcp"))


def test_each_backend_reads_its_own_lines():
    nixl, mooncake = backend("nixl"), backend("mooncake")
    assert prove({"prefill": NIXL_TCP, "decode": NIXL_TCP}, nixl).used == "tcp"
    assert prove({"prefill": MOONCAKE_TCP, "decode": MOONCAKE_TCP}, mooncake).used == "tcp"
    # Read by the other backend, neither log proves anything: the proof asks the run's backend.
    assert prove({"prefill": NIXL_TCP, "decode": NIXL_TCP}, mooncake).used == "unknown"
    assert prove({"prefill": MOONCAKE_TCP, "decode": MOONCAKE_TCP}, nixl).used == "unknown"
    assert not prove({"prefill": NIXL_TCP}, nixl).allowed("rdma")
    assert prove({"prefill": NIXL_TCP}, nixl).allowed("any")


SCENARIO = "onebox-qwen25-0.5b"


def test_the_run_backend_is_the_stack_records_else_the_scenarios(tmp_path):
    scenario = load_scenario(SCENARIO)
    assert run_backend(tmp_path, scenario).name == scenario.launch.transfer_backend  # no record
    (tmp_path / "stack.json").write_text(json.dumps({"scenario": SCENARIO}))  # an older record: no backend
    assert run_backend(tmp_path, scenario).name == scenario.launch.transfer_backend
    (tmp_path / "stack.json").write_text(json.dumps({"scenario": SCENARIO, "transfer_backend": "nixl"}))
    assert run_backend(tmp_path, scenario).name == "nixl"


@pytest.mark.parametrize("value", ["nosuch", 7, ["nixl"]])
def test_a_record_naming_no_known_backend_is_refused(value, tmp_path):
    (tmp_path / "stack.json").write_text(json.dumps({"transfer_backend": value}))
    with pytest.raises(UserError, match="transfer_backend") as info:
        run_backend(tmp_path, load_scenario(SCENARIO))
    assert "\n" not in str(info.value)
