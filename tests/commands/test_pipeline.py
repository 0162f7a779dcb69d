"""The one reproduction pipeline (`pdrepro repro`): its stages, their order and the status it ends with.

The stages are run through stand-ins for the CLI commands and the gates' pytest, which record the typed request
(or the gates' command) they were handed and answer a chosen status; tests/commands/test_repro_make.py runs the
real stages end to end."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from pdrepro import pipeline
from pdrepro.cli import main
from pdrepro.commands import build_parser
from pdrepro.commands.requests import REPRODUCTION, pipeline_sweep_request
from pdrepro.fabric.request import DoctorRequest, PairRequest
from pdrepro.rundir.request import AnalyzeRequest, CheckRequest
from pdrepro.stages import Judging, Reproduction
from pdrepro.sweep.request import SweepRequest

SWEEP = pipeline_sweep_request(["--wait-timeout", "5"], scenario="s", router="http://r:8000", out="runs/X",
                               prefill="http://p:30000", model_path="/m", dataset_path="/d.json")


def _stages(calls: list, statuses: dict[str, int] | None = None, **real) -> Reproduction:
    """Each stage noting [its name, the request it was handed] and answering the status ``statuses`` names;
    ``real``: a stage of the CLI's own in a stand-in's place."""
    def stage(name: str):
        def run(request) -> int:
            calls.append([name, request])
            return real[name](request) if name in real else (statuses or {}).get(name, 0)
        return run
    return Reproduction(doctor=stage("doctor"), pair=stage("pair"), sweep=stage("sweep"),
                        judging=Judging(analyze=stage("analyze"), check=stage("check")))


def _run(statuses: dict[str, int], **options) -> tuple[int, list]:
    calls: list = []

    def spawn(argv):
        calls.append(argv)
        return statuses.get("gates", 0)

    rc = pipeline.run(pipeline.Pipeline(sweep=SWEEP, **options), stages=_stages(calls, statuses), spawn=spawn)
    return rc, calls


def test_stages_run_in_order_and_success_is_zero(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the preflight makes RUN/nodes for its record
    (tmp_path / "repro").mkdir()
    (tmp_path / "repro" / "conftest.py").write_text("")  # the gate suite, as the pipeline checks it
    rc, calls = _run({}, preflight_role="decode", gates="repro/", pytest=("pytest",))
    assert rc == 0
    # The preflight writes this node's record into the run, whatever its verdict: the request its command line makes.
    assert calls[0] == ["doctor", DoctorRequest.from_args(build_parser().parse_args([
        "doctor", "--role", "decode", "--scenario", "s", "--model", "/m", "--dataset", "/d.json",
        "--out", "runs/X/nodes/decode.json"]))]
    assert (tmp_path / "runs" / "X" / "nodes").is_dir()
    # The sweep the command built, told not to analyse (the pipeline's third stage does).
    assert calls[1] == ["sweep", SweepRequest.from_args(build_parser().parse_args([
        "sweep", "--scenario", "s", "--router", "http://r:8000", "--prefill", "http://p:30000", "--model-path", "/m",
        "--dataset-path", "/d.json", "--out", "runs/X", "--no-analyze", "--wait-timeout", "5"]))]
    assert calls[2] == ["analyze", AnalyzeRequest(Path("runs/X"))]
    # `repro` made the run, so it names the gates' JUnit file there; the gates alone write none into a run.
    assert calls[3] == ["pytest", "repro/", "--run-dir", "runs/X", "-p", "no:cacheprovider", "-q",
                        "--junitxml=runs/X/junit.xml"]
    out = capsys.readouterr().out
    assert out.index("== 1/4 preflight") < out.index("== 2/4 sweep: s against http://r:8000 into runs/X") \
        < out.index("== 3/4 analyze runs/X") < out.index("== 4/4 gates") < out.index("report: runs/X/report.md")


@pytest.mark.parametrize("statuses,expected", [
    ({"sweep": 1, "gates": 1}, 1),       # a failed length: still analysed and gated, the gates fail it
    ({"analyze": 2, "gates": 2}, 2),     # unreadable inputs: analyze and the gates both say 2
    ({"analyze": 2, "gates": 1}, 1),     # analyze could not write its files, the gates judged: theirs is the verdict
    ({"gates": 1}, 1),
])
def test_the_verdict_is_the_gates_status(statuses, expected):
    # `pdrepro check` and the gates reach one status on one run: repro ends with it, whatever a stage before said.
    rc, calls = _run(statuses, pytest=("pytest",))
    assert rc == expected
    assert [c[0] for c in calls] == ["sweep", "analyze", "pytest"]


@pytest.mark.parametrize("stage", ["analyze"])
@pytest.mark.parametrize("status", [130, 143])
def test_a_stage_stopped_by_a_signal_ends_the_pipeline(stage, status):
    rc, calls = _run({stage: status}, pytest=("pytest",))
    assert rc == status and [c[0] for c in calls] == ["sweep", "analyze"]


@pytest.mark.parametrize("words", ["--out elsewhere", "--wait-timeout 5 --router=http://x:1", "--no-analyze",
                                   "--scenario other"])
def test_sweep_args_may_not_set_a_flag_repro_sets(words, capsys):
    rc = main(["repro", "--router", "http://r:8000", f"--sweep-args={words}"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "which `pdrepro repro` sets" in err, err


@pytest.mark.parametrize("status", [2, 130, 143])
def test_stopped_sweep_ends_the_pipeline(status, capsys):
    rc, calls = _run({"sweep": status})
    assert rc == status and [c[0] for c in calls] == ["sweep"]
    assert "== 3/4" not in capsys.readouterr().out


def test_failed_preflight_stops_before_the_sweep(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "repro").mkdir()
    (tmp_path / "repro" / "conftest.py").write_text("")
    rc, calls = _run({"doctor": 2}, preflight_role="decode")
    assert rc == 2 and [c[0] for c in calls] == ["doctor"]


def test_without_pytest_the_run_is_judged_by_check(monkeypatch, capsys):
    monkeypatch.setattr(pipeline.importlib.util, "find_spec", lambda name: None)
    rc, calls = _run({"check": 1})
    assert rc == 1 and calls[-1] == ["check", CheckRequest(Path("runs/X"))]
    assert "no pytest here, judging with pdrepro check" in capsys.readouterr().out


def test_default_gates_run_under_this_interpreter():
    argv = pipeline.gates_argv(pipeline.Pipeline(sweep=SWEEP))
    assert argv[:3] == [sys.executable, "-m", "pytest"] and argv[3:5] == ["repro", "--run-dir"]


def test_quiet_announces_nothing(capsys):
    _run({}, quiet=True)
    assert capsys.readouterr().out == ""


def test_command_passes_its_flags_to_the_stages(monkeypatch):
    seen = {}
    monkeypatch.setattr(pipeline, "run", lambda p, stages: seen.update(p=p, stages=stages) or 0)
    assert main(["repro", "--router", "http://r:8000", "--out", "runs/Y", "--bench-in-place", "--configuration", "1P1D",
                 "--model-path", "/m", "--dataset-path", "/d.json", "--sweep-args=--metrics --wait-timeout 9",
                 "--pytest", "python -m pytest -p no:xdist", "--preflight", "decode"]) == 0
    p = seen["p"]
    # The sweep is the request `pdrepro sweep` would make of the same flags: built once, typed, never words.
    assert p.sweep == SweepRequest.from_args(build_parser().parse_args([
        "sweep", "--scenario", pipeline.DEFAULT_SCENARIO, "--router", "http://r:8000", "--configuration", "1P1D",
        "--bench-in-place", "--model-path", "/m", "--dataset-path", "/d.json", "--out", "runs/Y", "--no-analyze",
        "--metrics", "--wait-timeout", "9"]))
    assert seen["stages"] is REPRODUCTION
    assert p.pytest == ("python", "-m", "pytest", "-p", "no:xdist") and p.preflight_role == "decode"


def test_unbalanced_quote_is_one_line(capsys):
    assert main(["repro", "--router", "http://r:8000", "--sweep-args=--x 'y"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pdrepro repro: error: --sweep-args") and "\n" not in err


@pytest.mark.parametrize("decode_mtu,expected", [(9000, 0), (1500, 1)])
def test_node_records_are_kept_in_the_run_and_pair_checked_before_the_sweep(tmp_path, monkeypatch, capsys,
                                                                            decode_mtu, expected):
    # The real doctor on two fake nodes: the prefill node's record written there, the decode node's by the
    # preflight (its sysfs tree given to the stand-in), the pair check the real one.
    from sysfs_builder import h20_node

    monkeypatch.chdir(tmp_path)
    (tmp_path / "repro").mkdir()
    (tmp_path / "repro" / "conftest.py").write_text("")
    h20_node(tmp_path / "prefill-sys")
    h20_node(tmp_path / "decode-sys", mtu=decode_mtu)
    prefill = tmp_path / "prefill.json"
    assert main(["doctor", "--sysfs-root", str(tmp_path / "prefill-sys"), "--role", "prefill", "--out", str(prefill)]) in (0, 1)
    calls: list = []

    def preflight(request):
        # The real doctor on this node's request, reading the decode node's sysfs tree.
        REPRODUCTION.doctor(dataclasses.replace(request, sysfs_root=tmp_path / "decode-sys"))
        return 0  # a node whose other checks pass: only the pair is judged here

    sweep = pipeline_sweep_request(scenario="h20-qwen3-235b-1p1d", router="http://r:8000", out="run", model_path="/m",
                                   dataset_path="/d.json")
    p = pipeline.Pipeline(sweep=sweep, preflight_role="decode", node_records=(str(prefill),), pytest=("pytest",))
    rc = pipeline.run(p, stages=_stages(calls, doctor=preflight, pair=REPRODUCTION.pair), spawn=lambda argv: 0)
    assert rc == expected
    assert (tmp_path / "run" / "nodes" / "prefill.json").is_file() and (tmp_path / "run" / "nodes" / "decode.json").is_file()
    pair = [c for c in calls if c[0] == "pair"]
    assert pair == [["pair", PairRequest.from_args(build_parser().parse_args([
        "doctor", "--pair", "run/nodes/prefill.json", "run/nodes/decode.json", "--scenario", "h20-qwen3-235b-1p1d"]))]]
    stages = [c[0] for c in calls]
    if expected:
        assert "sweep" not in stages and "MISMATCH active MTU: prefill 4096, decode 1024" in capsys.readouterr().out
    else:
        assert stages.index("sweep") > calls.index(pair[0])


def test_a_record_of_the_preflights_own_role_or_none_is_refused(tmp_path, monkeypatch):
    from pdrepro.core.errors import UserError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "repro").mkdir()
    (tmp_path / "repro" / "conftest.py").write_text("")
    (tmp_path / "x.json").write_text("{}")
    p = pipeline.Pipeline(sweep=SWEEP, preflight_role="decode", node_records=(str(tmp_path / "x.json"),))
    with pytest.raises(UserError, match="missing key"):
        pipeline.run(p, stages=_stages([]), spawn=lambda argv: 0)
    assert not (tmp_path / "runs").exists()  # refused before anything was written
