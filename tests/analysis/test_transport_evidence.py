"""The transport state and the NIC witness decided from every source a run holds, on copies of the recorded
one-GPU host run (tests/recorded/h200-onebox-host-sglang-0.5.15.post1: TCP, no RDMA device, N/A under its own
scenario) with one of its files changed the way a tampered, mixed or misread run would be: a source that was not
read abstains, two that disagree fail the transport check naming both, evidence of the wrong type is exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fakecluster import mooncake_startup
from recordedrun import copy_run

from pdrepro.cli import main
from pdrepro.core.errors import UserError
from pdrepro.kinds.registry import load_or_analyze
from pdrepro.rundir import RunDir
from pdrepro.scenario.model import load_scenario
from pdrepro.verdicts.gates import evaluate

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "recorded" / "h200-onebox-host-sglang-0.5.15.post1"
SCENARIO = "onebox-qwen25-0.5b"


def _copy(tmp_path: Path) -> Path:
    return copy_run(tmp_path, RECORDED)


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2))


def _verdicts(run: Path) -> tuple[dict, dict[tuple[str, int | None], str]]:
    scenario = load_scenario(SCENARIO)
    summary = load_or_analyze(RunDir(run), scenario)
    return summary, {(r.name, r.prompt_len): r.verdict for r in evaluate(summary, scenario)}


def _check(run: Path, capsys) -> tuple[int, str, str]:
    rc = main(["check", str(run), "--scenario", SCENARIO])
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_recorded_run_is_not_applicable_because_every_source_agrees(tmp_path):
    summary, verdicts = _verdicts(_copy(tmp_path))
    evidence = summary["transport_evidence"]
    assert evidence["conflicts"] == [] and evidence["rdma_devices"]["found"] is False
    assert verdicts[("transport", None)] == "N/A"
    # Both nodes' lists are the sweep host's, and the run proves both servers ran there (loopback).
    assert any("reached at 127.0.0.1" in line for line in evidence["rdma_devices"]["evidence"])


def test_a_node_list_naming_a_device_where_the_host_record_names_none_fails_naming_both(tmp_path, capsys):
    run = _copy(tmp_path)
    _edit_json(run / "counters" / "4096.json", lambda d: d["nodes"]["decode"].update(rdma_devices=["mlx5_0"]))
    summary, verdicts = _verdicts(run)
    said = " ".join(summary["transport_evidence"]["conflicts"])
    assert "counters/4096.json" in said and "lists [mlx5_0]" in said and "lists no RDMA device" in said
    assert verdicts[("transport", None)] == "FAIL" and "N/A" not in verdicts.values()
    rc, out, _ = _check(run, capsys)
    assert rc == 1 and "FAIL the run's transport evidence disagrees" in out and "N/A " not in out


def test_a_proof_saying_rdma_where_the_logs_say_tcp_fails(tmp_path, capsys):
    run = _copy(tmp_path)

    def rdma(prov):
        prov["transport"]["proven"] = True
        for server in prov["transport"]["servers"].values():
            server["verdict"] = "rdma"
    _edit_json(run / "provenance.json", rdma)
    summary, verdicts = _verdicts(run)
    said = " ".join(summary["transport_evidence"]["conflicts"])
    assert "the sweep's proof says RDMA, the servers' logs say tcp" in said
    assert "the proof says the prefill engine used rdma, its log says tcp" in said
    assert verdicts[("transport", None)] == "FAIL"
    assert _check(run, capsys)[0] == 1


def test_an_engine_that_found_an_hca_on_a_node_listed_without_one_fails(tmp_path):
    run = _copy(tmp_path)
    log = run / "logs" / "prefill.log"
    lines = log.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "TcpTransport: listen on port" in line)
    # The engine's own start-up lines of an RDMA device, in the latest start (MC_FORCE_TCP still wins: TCP).
    lines[at:at] = [line + "\n" for line in mooncake_startup("rdma", nics=1)]
    log.write_text("".join(lines))
    summary, verdicts = _verdicts(run)
    assert summary["transport"] == "tcp"
    conflict = summary["transport_evidence"]["conflicts"][0]
    assert "the prefill engine's log found [mlx5_0]" in conflict and "lists no RDMA device" in conflict
    assert verdicts[("transport", None)] == "FAIL" and "N/A" not in verdicts.values()


def test_the_sweep_host_speaks_for_a_remote_server_only_with_proof(tmp_path):
    run = _copy(tmp_path)
    boot = json.loads((run / "stack.json").read_text())["boot_id"]

    def remote(prov):
        prov["endpoints"]["prefill"] = "http://10.0.0.7:30000"
        prov["endpoints"]["decode"] = "http://10.0.0.7:30001"
    _edit_json(run / "provenance.json", remote)
    summary, verdicts = _verdicts(run)
    # Nothing proves 10.0.0.7 is the sweep's host: its (empty) lists abstain, and the witness decides.
    assert summary["transport_evidence"]["rdma_devices"]["found"] is None
    assert verdicts[("transport", None)] == "PASS" and verdicts[("nic_witness", 4096)] == "FAIL"
    # The stack record of the same boot that started both servers proves it.
    _edit_json(run / "provenance.json", lambda prov: prov["host"].update(boot_id=boot))
    summary, verdicts = _verdicts(run)
    assert summary["transport_evidence"]["rdma_devices"]["found"] is False
    assert any("stack.json boot id" in line for line in summary["transport_evidence"]["rdma_devices"]["evidence"])
    assert verdicts[("transport", None)] == "N/A"
    # Another boot's record proves nothing.
    _edit_json(run / "stack.json", lambda rec: rec.update(boot_id="00000000-0000-0000-0000-000000000000"))
    summary, _ = _verdicts(run)
    assert summary["transport_evidence"]["rdma_devices"]["found"] is None


@pytest.mark.parametrize("where, edit, words", [
    ("counters/128.json", lambda d: d["nodes"]["decode"].update(rdma_devices="mlx5_0"), "rdma_devices: is str"),
    ("counters/128.json", lambda d: d["nodes"].update(decode=["mlx5_0"]), "nodes.decode: is list"),
    ("provenance.json", lambda d: d["host"].update(nics=["mlx5_0"]), "host.nics: is list"),
    ("provenance.json", lambda d: d.update(transport="rdma"), "transport: is str"),
    ("provenance.json", lambda d: d["transport"].update(proven="yes"), "transport.proven: is str"),
    ("provenance.json", lambda d: d.update(endpoints=["http://127.0.0.1:30000"]), "endpoints: is not an object"),
    ("stack.json", lambda d: d.update(boot_id=7), "holds no boot_id text"),
])
def test_evidence_of_the_wrong_type_is_refused_on_one_line(tmp_path, capsys, where, edit, words):
    run = _copy(tmp_path)
    if where == "stack.json":  # read only where the sweep recorded its own boot
        _edit_json(run / "provenance.json", lambda prov: prov["host"].update(boot_id="b"))
    _edit_json(run / where, edit)
    with pytest.raises(UserError, match=words.replace("(", r"\(")):
        load_or_analyze(RunDir(run), load_scenario(SCENARIO))
    rc, _, err = _check(run, capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and words in err and "Traceback" not in err


def test_the_gates_fail_a_run_whose_sources_disagree_as_check_does(tmp_path):
    run = _copy(tmp_path)
    _edit_json(run / "counters" / "4096.json", lambda d: d["nodes"]["decode"].update(rdma_devices=["mlx5_0"]))
    proc = subprocess.run([sys.executable, "-m", "pytest", "repro/", "--run-dir", str(run), "--scenario", SCENARIO,
                           "-p", "no:cacheprovider", "-q", "--no-cov", "-p", "no:xdist"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "test_transport_proven FAILED" in proc.stdout or "FAILED repro/test_gates.py::test_transport_proven" in proc.stdout


@pytest.mark.parametrize("gpu", [{"error": "nvidia-smi not found on the host running the sweep"},
                                 {"error": "nvidia-smi failed: TimeoutExpired"},
                                 {"driver": None, "cuda": None, "gpus": []}])
def test_a_sweep_host_without_a_gpu_does_not_speak_for_gpu_servers(tmp_path, capsys, gpu):
    # The servers say they ran on CUDA; the sweep's host, as the sweep records it, has no GPU: reached on loopback
    # or not (a tunnel), it is not their node, so its empty device lists are no evidence of "no RDMA device".
    run = _copy(tmp_path)
    _edit_json(run / "provenance.json", lambda d: d["host"].update(gpu=gpu))
    summary, verdicts = _verdicts(run)
    devices = summary["transport_evidence"]["rdma_devices"]
    assert devices["found"] is None
    assert all(line.endswith("no record of its RDMA devices") for line in devices["evidence"])
    assert "N/A" not in verdicts.values()
    assert verdicts[("nic_witness", 1024)] == "FAIL"
    rc, out, _ = _check(run, capsys)
    assert rc == 1 and "N/A " not in out


def test_a_gpuless_sweep_host_still_speaks_for_servers_that_run_without_one(tmp_path):
    # Servers whose /server_info names no accelerator (a CPU build) may well share the sweep's GPU-less host.
    run = _copy(tmp_path)

    def cpu(prov):
        prov["host"]["gpu"] = {"error": "nvidia-smi not found on the host running the sweep"}
        for info in prov["server_info"].values():
            info["device"] = "cpu"
    _edit_json(run / "provenance.json", cpu)
    summary, verdicts = _verdicts(run)
    assert summary["transport_evidence"]["rdma_devices"]["found"] is False
    assert verdicts[("transport", None)] == "N/A"
