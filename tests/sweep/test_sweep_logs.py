"""The sweep copies every server's log into the run, and refuses a log source that cannot see them all."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sweephelp import dataset

from pdrepro.core.errors import UserError
from pdrepro.rundir import RunDir
from pdrepro.sweep.logsource import DirLogSource, DockerLogSource, PerRoleLogSource, require_every_server

START = "[2025-08-08 09:00:00] server_args=ServerArgs(model_path='/m', disaggregation_mode='{role}')\n"


def _shared_folder(tmp_path):
    folder = tmp_path / "shared-logs"
    folder.mkdir()
    for name in ("prefill.log", "prefill-1.log", "decode.log", "decode-1.log"):
        role = name.split(".")[0].split("-")[0]
        (folder / name).write_text(START.format(role=role) + f"[2025-08-08 09:00:01] served by {name}\n")
    # Not server logs by the rule: a step's own file, the router's, a rotated copy.
    for name in ("prefill-0.log", "router.log", "prefill.log.1", "decode-01.log"):
        (folder / name).write_text("not a server log\n")
    return folder


def test_folder_source_copies_every_server_log(tmp_path):
    run = RunDir(tmp_path / "run")
    copied = DirLogSource(_shared_folder(tmp_path)).copy_to(run)
    assert sorted(p.name for p in copied) == ["decode-1.log", "decode.log", "prefill-1.log", "prefill.log"]
    assert [p.name for p in run.role_logs("prefill")] == ["prefill.log", "prefill-1.log"]
    assert [p.name for p in run.role_logs("decode")] == ["decode.log", "decode-1.log"]
    for p in copied:
        assert p.read_text().endswith(f"served by {p.name}\n")
    assert sorted(p.name for p in run.logs_dir.iterdir()) == sorted(p.name for p in copied)


def test_folder_source_keeps_each_servers_earlier_start(tmp_path):
    folder = _shared_folder(tmp_path)
    run = RunDir(tmp_path / "run")
    DirLogSource(folder).copy_to(run)
    # prefill-1 restarts and its folder file is rotated away: the run keeps the first start, adds the second.
    (folder / "prefill-1.log").write_text(START.format(role="prefill").replace("09:00:00", "10:00:00")
                                          + "[2025-08-08 10:00:01] second start\n")
    DirLogSource(folder).copy_to(run)
    text = run.server_log("prefill", 1).read_text()
    assert "served by prefill-1.log" in text and text.endswith("second start\n")
    assert run.role_log("prefill").read_text().endswith("served by prefill.log\n")


def test_docker_source_refused_for_several_servers_of_a_role():
    names = {"prefill": "pdrepro-prefill", "decode": "pdrepro-decode"}
    require_every_server(DockerLogSource(names), {"prefill": 1, "decode": 1})  # 1P1D: both containers can be here
    with pytest.raises(UserError, match=r"^--logs-from docker: the topology runs 2 decode servers.*--logs-from DIR"):
        require_every_server(DockerLogSource(names), {"prefill": 1, "decode": 2})
    per_role = PerRoleLogSource({"prefill": DockerLogSource(names, base_url="ssh://root@10.0.0.1")})
    with pytest.raises(UserError, match=r"^--prefill-logs-from docker: the topology runs 2 prefill servers"):
        require_every_server(per_role, {"prefill": 2, "decode": 2})


def test_folder_source_is_fine_for_any_topology(tmp_path):
    require_every_server(DirLogSource(_shared_folder(tmp_path)), {"prefill": 4, "decode": 4})


def test_sweep_of_2p2d_from_docker_is_one_line_and_exit_2(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pdrepro", "sweep", "--scenario", "h20-qwen3-235b-2p2d", "--router", "http://127.0.0.1:9",
         "--prefill", "http://127.0.0.1:9", "--decode", "http://127.0.0.1:9", "--out", str(tmp_path / "run"),
         "--model-path", str(tmp_path), "--dataset-path", str(dataset(tmp_path)), "--image", "pdrepro-gpu:0.1.0",
         "--logs-from", "docker", "--wait-timeout", "1"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "pdrepro sweep: error: --logs-from docker: the topology runs 2 prefill servers, but a Docker engine reaches "
        "only one prefill container, on its own host; use --logs-from DIR with the shared folder every server writes "
        "its log into (prefill.log, prefill-1.log, ...)"]
    assert not (tmp_path / "run" / "bench").exists()


def test_transport_proof_reads_every_server(tmp_path):
    from fakecluster import mooncake_startup

    from pdrepro.scenario.model import load_scenario
    from pdrepro.sweep import runner
    from pdrepro.sweep.state import SweepState

    folder = tmp_path / "shared"
    folder.mkdir()
    for name, transport in (("prefill.log", "rdma"), ("prefill-1.log", "tcp"), ("decode.log", "rdma"),
                            ("decode-1.log", "rdma")):
        role = name.split(".")[0].split("-")[0]
        (folder / name).write_text(START.format(role=role) + "\n".join(mooncake_startup(transport)) + "\n")
    said: list[str] = []
    cfg = type("Cfg", (), {"configuration": None, "prove_transport": True, "log_source": DirLogSource(folder),
                           "say": said.append, "scenario": load_scenario("h20-qwen3-235b-1p1d"),
                           "out": tmp_path / "run"})()
    state = SweepState(RunDir(tmp_path / "run"))
    with pytest.raises(runner.TransportNotProven) as caught:
        runner._prove(cfg, state)
    # The second prefill server fell back to TCP: the first one's RDMA does not hide it.
    assert "prefill-1: tcp" in str(caught.value)
    assert sorted(caught.value.facts["servers"]) == ["decode", "decode-1", "prefill", "prefill-1"]
    (folder / "prefill-1.log").write_text(START.format(role="prefill") + "\n".join(mooncake_startup("rdma")) + "\n")
    proof = runner._prove(cfg, state)
    assert proof["proven"] is True and len(proof["servers"]) == 4


def test_logs_the_servers_write_into_the_run_itself_stay_the_servers_files(tmp_path):
    # `pdrepro stack up` logs into RUN/logs and the sweep is given --logs-from RUN/logs: copying
    # would replace each file under the running server, whose later lines would be lost (seen on
    # the H200: every length after the first missing from prefill.log).
    run = RunDir(tmp_path / "run")
    run.logs_dir.mkdir(parents=True)
    writers = {role: (run.logs_dir / f"{role}.log").open("a") for role in ("prefill", "decode")}
    for role, f in writers.items():
        f.write(f"{role} line 1\n")
        f.flush()
    inodes = {role: (run.logs_dir / f"{role}.log").stat().st_ino for role in writers}
    copied = DirLogSource(run.logs_dir).copy_to(run, {"prefill": 1, "decode": 1})
    for role, f in writers.items():
        f.write(f"{role} line 2\n")
        f.close()
    assert sorted(p.name for p in copied) == ["decode.log", "prefill.log"]
    for role in writers:
        path = run.logs_dir / f"{role}.log"
        assert path.stat().st_ino == inodes[role]
        assert path.read_text() == f"{role} line 1\n{role} line 2\n"
